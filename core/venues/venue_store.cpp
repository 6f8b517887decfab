#include "core/venues/venue_store.h"

#include <stdexcept>

#include "core/store/lab_store.h"

namespace crosslab::venues {
namespace {

constexpr const char* kBoxColumns =
    "b.id, b.venue_id, v.name, b.name, IFNULL(b.host,''), IFNULL(b.port,22), IFNULL(b.ssh_user,''), "
    "IFNULL(b.key_file,''), IFNULL(b.gpu_model,''), IFNULL(b.gpu_count,0), b.price_per_hour, "
    "IFNULL(b.min_minutes,0), b.state, IFNULL(b.provisioned_at,''), IFNULL(b.ready_at,''), "
    "IFNULL(b.deleted_at,''), IFNULL(b.provider_vm,''), IFNULL(b.team,'') "
    "FROM boxes b JOIN venues v ON v.id = b.venue_id ";

BoxRow readBox(store::Statement& st) {
  BoxRow b;
  b.id = st.int64(0);
  b.venueId = st.int64(1);
  b.venue = st.text(2);
  b.name = st.text(3);
  b.host = st.text(4);
  b.port = static_cast<int>(st.int64(5));
  b.user = st.text(6);
  b.keyFile = st.text(7);
  b.gpuModel = st.text(8);
  b.gpuCount = static_cast<int>(st.int64(9));
  b.pricePerHour = st.optReal(10);
  b.minMinutes = static_cast<int>(st.int64(11));
  b.state = st.text(12);
  b.provisionedAt = st.text(13);
  b.readyAt = st.text(14);
  b.deletedAt = st.text(15);
  b.providerVm = st.text(16);
  b.team = st.text(17);
  return b;
}

std::optional<std::string> nonEmpty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

}  // namespace

VenueStore::VenueStore(store::LabStore& lab) : lab_(lab) {}

std::int64_t VenueStore::ensureVenue(const std::string& name, const std::string& kind, const std::string& provider) {
  auto& db = lab_.db();
  auto find = db.prepare("SELECT id FROM venues WHERE name = ?");
  find.bind(1, name);
  if (find.step()) return find.int64(0);
  auto ins = db.prepare("INSERT INTO venues(name, kind, provider, availability) VALUES (?, ?, ?, 'unknown')");
  ins.bind(1, name).bind(2, kind).bind(3, nonEmpty(provider)).run();
  return db.lastInsertId();
}

std::int64_t VenueStore::recordLadder(VenueRow row) {
  if (row.name.empty()) throw std::invalid_argument("a ladder row needs a venue name");
  if (row.probedAt.empty()) row.probedAt = store::utcNow();
  auto& db = lab_.db();
  store::Transaction tx(db);
  const std::int64_t id = ensureVenue(row.name, row.kind, row.provider);
  auto st = db.prepare(
      "UPDATE venues SET kind=?, provider=?, region=?, accelerator=?, availability=?, price_per_hour=?, "
      "spot_price_per_hour=?, probed_at=?, notes=?, quota=? WHERE id=?");
  st.bind(1, row.kind).bind(2, nonEmpty(row.provider)).bind(3, nonEmpty(row.region)).bind(4, nonEmpty(row.accelerator));
  st.bind(5, row.availability).bind(6, row.pricePerHour).bind(7, row.spotPricePerHour).bind(8, row.probedAt);
  st.bind(9, nonEmpty(row.notes)).bind(10, nonEmpty(row.quota)).bind(11, id).run();
  tx.commit();
  return id;
}

std::vector<VenueRow> VenueStore::venues() {
  auto st = lab_.db().prepare(
      "SELECT id, name, kind, IFNULL(provider,''), IFNULL(region,''), IFNULL(accelerator,''), "
      "IFNULL(availability,'unknown'), price_per_hour, spot_price_per_hour, IFNULL(probed_at,''), IFNULL(notes,''), "
      "IFNULL(quota,'') FROM venues ORDER BY name");
  std::vector<VenueRow> out;
  while (st.step()) {
    VenueRow v;
    v.id = st.int64(0);
    v.name = st.text(1);
    v.kind = st.text(2);
    v.provider = st.text(3);
    v.region = st.text(4);
    v.accelerator = st.text(5);
    v.availability = st.text(6);
    v.pricePerHour = st.optReal(7);
    v.spotPricePerHour = st.optReal(8);
    v.probedAt = st.text(9);
    v.notes = st.text(10);
    v.quota = st.text(11);
    out.push_back(v);
  }
  return out;
}

std::int64_t VenueStore::addBox(const BoxRow& box) {
  if (box.name.empty()) throw std::invalid_argument("a box needs a name");
  if (activeBox(box.name)) throw std::runtime_error("a box named '" + box.name + "' already exists (box remove it first)");
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto st = db.prepare(
      "INSERT INTO boxes(venue_id, name, host, port, ssh_user, key_file, gpu_model, gpu_count, price_per_hour, "
      "min_minutes, state, provisioned_at, ready_at, provider_vm, team) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, box.venueId).bind(2, box.name).bind(3, nonEmpty(box.host)).bind(4, box.port).bind(5, nonEmpty(box.user));
  st.bind(6, nonEmpty(box.keyFile)).bind(7, nonEmpty(box.gpuModel)).bind(8, box.gpuCount).bind(9, box.pricePerHour);
  st.bind(10, box.minMinutes).bind(11, box.state);
  st.bind(12, box.provisionedAt.empty() ? store::utcNow() : box.provisionedAt);
  st.bind(13, nonEmpty(box.readyAt)).bind(14, nonEmpty(box.providerVm)).bind(15, nonEmpty(box.team)).run();
  const auto id = db.lastInsertId();
  tx.commit();
  return id;
}

std::optional<BoxRow> VenueStore::activeBox(const std::string& name) {
  auto st = lab_.db().prepare(std::string("SELECT ") + kBoxColumns +
                              "WHERE b.name = ? AND b.deleted_at IS NULL ORDER BY b.id DESC LIMIT 1");
  st.bind(1, name);
  if (!st.step()) return std::nullopt;
  return readBox(st);
}

std::vector<BoxRow> VenueStore::boxes(bool includeEnded) {
  auto st = lab_.db().prepare(std::string("SELECT ") + kBoxColumns +
                              (includeEnded ? "" : "WHERE b.deleted_at IS NULL ") + "ORDER BY b.id");
  std::vector<BoxRow> out;
  while (st.step()) out.push_back(readBox(st));
  return out;
}

void VenueStore::setBoxState(std::int64_t boxId, const std::string& state) {
  auto st = lab_.db().prepare("UPDATE boxes SET state = ? WHERE id = ?");
  st.bind(1, state).bind(2, boxId).run();
}

void VenueStore::markReady(std::int64_t boxId, const std::string& host) {
  auto st = lab_.db().prepare(
      "UPDATE boxes SET state = 'running', host = COALESCE(NULLIF(?, ''), host), ready_at = ? WHERE id = ?");
  st.bind(1, host).bind(2, store::utcNow()).bind(3, boxId).run();
}

MeterReading VenueStore::meter(const BoxRow& box, double nowEpoch) const {
  const auto start = parseUtc(box.provisionedAt);
  if (!start || !box.pricePerHour) return {};
  const double end = box.deletedAt.empty() ? nowEpoch : parseUtc(box.deletedAt).value_or(nowEpoch);
  return meterReading(*box.pricePerHour, box.minMinutes, *start, end);
}

double VenueStore::endBox(std::int64_t boxId, const std::string& finalState, double endEpoch) {
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto up = db.prepare("UPDATE boxes SET state = ?, deleted_at = ? WHERE id = ? AND deleted_at IS NULL");
  up.bind(1, finalState).bind(2, formatUtc(endEpoch)).bind(3, boxId).run();
  auto sel = db.prepare(std::string("SELECT ") + kBoxColumns + "WHERE b.id = ?");
  sel.bind(1, boxId);
  if (!sel.step()) throw std::runtime_error("no box with id " + std::to_string(boxId));
  const BoxRow box = readBox(sel);
  const MeterReading m = meter(box, endEpoch);
  if (box.pricePerHour) {
    auto led = db.prepare("INSERT INTO ledger(box_id, at, category, usd, minutes, note) VALUES (?,?,'compute',?,?,?)");
    led.bind(1, boxId).bind(2, box.deletedAt).bind(3, m.usd).bind(4, m.billedHours * 60.0);
    led.bind(5, "box life " + box.name + " (" + std::to_string(box.minMinutes) + " min minimum)").run();
  }
  tx.commit();
  return m.usd;
}

double VenueStore::idleSeconds(const BoxRow& box, double nowEpoch) {
  auto st = lab_.db().prepare("SELECT MAX(at) FROM events WHERE box_id = ?");
  st.bind(1, box.id);
  double last = parseUtc(box.readyAt.empty() ? box.provisionedAt : box.readyAt).value_or(nowEpoch);
  if (st.step() && !st.isNull(0)) last = std::max(last, parseUtc(st.text(0)).value_or(last));
  return std::max(0.0, nowEpoch - last);
}

void VenueStore::touchBox(std::int64_t boxId, const std::string& type, const std::string& message) {
  lab_.addEvent(std::nullopt, boxId, type, message);
}

void VenueStore::addMilestone(const std::string& venue, const std::string& milestone, const std::string& atIso,
                              const std::string& note) {
  if (!parseUtc(atIso)) throw std::invalid_argument("not an ISO-8601 UTC time: " + atIso);
  auto& db = lab_.db();
  store::Transaction tx(db);
  const auto venueId = ensureVenue(venue, "cloud");
  auto st = db.prepare("INSERT INTO timeline(venue_id, milestone, at, note) VALUES (?,?,?,?)");
  st.bind(1, venueId).bind(2, milestone).bind(3, atIso).bind(4, nonEmpty(note)).run();
  tx.commit();
}

std::vector<Milestone> VenueStore::timeline(const std::string& venue) {
  auto st = lab_.db().prepare(
      "SELECT t.milestone, t.at FROM timeline t JOIN venues v ON v.id = t.venue_id WHERE v.name = ? ORDER BY t.at");
  st.bind(1, venue);
  std::vector<Milestone> out;
  while (st.step()) out.push_back({st.text(0), parseUtc(st.text(1)).value_or(0)});
  return out;
}

}  // namespace crosslab::venues

namespace crosslab::venues {

bool VenueStore::noteMilestoneOnce(const std::string& venue, const std::string& milestone, const std::string& sinceIso) {
  auto st = lab_.db().prepare(
      "SELECT count(*) FROM timeline t JOIN venues v ON v.id = t.venue_id WHERE v.name = ? AND t.milestone = ? "
      "AND t.at >= ?");
  st.bind(1, venue).bind(2, milestone).bind(3, sinceIso);
  if (st.step() && st.int64(0) > 0) return false;
  addMilestone(venue, milestone, store::utcNow());
  return true;
}

}  // namespace crosslab::venues
