#include "core/venues/venue_store.h"

#include <stdexcept>

#include "core/ledger/lab_ledger.h"
#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"

namespace crosslab::venues {
namespace {

constexpr const char* kBoxColumns =
    "b.id, b.venue_id, v.name, b.name, IFNULL(b.host,''), IFNULL(b.port,22), IFNULL(b.ssh_user,''), "
    "IFNULL(b.key_file,''), IFNULL(b.gpu_model,''), IFNULL(b.gpu_count,0), b.price_per_hour, "
    "IFNULL(b.min_minutes,0), b.state, IFNULL(b.provisioned_at,''), IFNULL(b.ready_at,''), "
    "IFNULL(b.deleted_at,''), IFNULL(b.provider_vm,''), IFNULL(b.team,''), IFNULL(b.provider,''), "
    "IFNULL(b.api_url,''), IFNULL(b.api_key_env,'') "
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
  b.provider = st.text(18);
  b.apiUrl = st.text(19);
  b.apiKeyEnv = st.text(20);
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
      "min_minutes, state, provisioned_at, ready_at, provider_vm, team, provider, api_url, api_key_env) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, box.venueId).bind(2, box.name).bind(3, nonEmpty(box.host)).bind(4, box.port).bind(5, nonEmpty(box.user));
  st.bind(6, nonEmpty(box.keyFile)).bind(7, nonEmpty(box.gpuModel)).bind(8, box.gpuCount).bind(9, box.pricePerHour);
  st.bind(10, box.minMinutes).bind(11, box.state);
  // Sub-second: a loopback life's staging can be shorter than a second.
  const std::string provisionedAt = box.provisionedAt.empty() ? ledger::isoUtc(ledger::epochNow()) : box.provisionedAt;
  st.bind(12, provisionedAt);
  st.bind(13, nonEmpty(box.readyAt)).bind(14, nonEmpty(box.providerVm)).bind(15, nonEmpty(box.team));
  st.bind(16, nonEmpty(box.provider)).bind(17, nonEmpty(box.apiUrl)).bind(18, nonEmpty(box.apiKeyEnv)).run();
  const auto id = db.lastInsertId();
  ledger::writeLifeEvent(db, id, ledger::LifeEvent::Provisioned, parseUtc(provisionedAt).value_or(ledger::epochNow()),
                         "provisioned " + box.name);
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

std::optional<BoxRow> VenueStore::box(std::int64_t boxId) {
  auto st = lab_.db().prepare(std::string("SELECT ") + kBoxColumns + "WHERE b.id = ?");
  st.bind(1, boxId);
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
  auto& db = lab_.db();
  store::Transaction tx(db);
  const double now = ledger::epochNow();
  auto st = db.prepare(
      "UPDATE boxes SET state = 'running', host = COALESCE(NULLIF(?, ''), host), ready_at = ? WHERE id = ?");
  st.bind(1, host).bind(2, ledger::isoUtc(now)).bind(3, boxId).run();
  ledger::writeLifeEvent(db, boxId, ledger::LifeEvent::Ready, now, "ready");
  tx.commit();
}

MeterReading lifeMeter(const BoxRow& box, double nowEpoch) {
  const auto start = parseUtc(box.provisionedAt);
  if (!start) return {};
  const double end = box.deletedAt.empty() ? nowEpoch : parseUtc(box.deletedAt).value_or(nowEpoch);
  // The ledger's billing rule (meterReading: per minute over the minimum; billing does not
  // depend on the work). An unpriced box (one's own machine) has an uptime and costs nothing.
  return meterReading(box.pricePerHour.value_or(0), box.minMinutes, *start, end);
}

MeterReading VenueStore::meter(const BoxRow& box, double nowEpoch) const { return lifeMeter(box, nowEpoch); }

LifeEnd VenueStore::endBox(std::int64_t boxId, const std::string& finalState, double endEpoch) {
  auto& db = lab_.db();
  store::Transaction tx(db);  // BEGIN IMMEDIATE: two enders serialize here
  auto up = db.prepare("UPDATE boxes SET state = ?, deleted_at = ? WHERE id = ? AND deleted_at IS NULL");
  up.bind(1, finalState).bind(2, ledger::isoUtc(endEpoch)).bind(3, boxId).run();
  const bool endedNow = db.scalarInt("SELECT changes()") == 1;
  auto sel = db.prepare(std::string("SELECT ") + kBoxColumns + "WHERE b.id = ?");
  sel.bind(1, boxId);
  if (!sel.step()) throw std::runtime_error("no box with id " + std::to_string(boxId));
  const BoxRow box = readBox(sel);
  LifeEnd end{endedNow, box.state, box.deletedAt, meter(box, endEpoch).usd};
  if (endedNow) {
    bookLife(box, endEpoch);
    addMilestoneTx(box.venue, milestone::kDeleted, box.deletedAt, finalState, box.id, "crosslab");
  }
  tx.commit();
  return end;
}

// The one place a life is booked (inside endBox's transaction): the ledger closes its work
// and records its derivation; its minutes and dollars are derived, never stored twice.
void VenueStore::bookLife(const BoxRow& box, double endEpoch) {
  ledger::bookEndedLife(lab_, box.id, endEpoch, box.state);
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
                              const std::string& note, std::int64_t boxId, const std::string& source) {
  store::Transaction tx(lab_.db());
  addMilestoneTx(venue, milestone, atIso, note, boxId, source);
  tx.commit();
}

void VenueStore::addMilestones(const std::string& venue, const std::vector<Milestone>& milestones) {
  store::Transaction tx(lab_.db());
  for (const auto& m : milestones) addMilestoneTx(venue, m.name, formatUtc(m.at), m.note, m.boxId, m.source);
  tx.commit();
}

void VenueStore::addMilestoneTx(const std::string& venue, const std::string& milestone, const std::string& atIso,
                                const std::string& note, std::int64_t boxId, const std::string& source) {
  if (!parseUtc(atIso)) throw std::invalid_argument("not an ISO-8601 UTC time: " + atIso);
  if (milestone.empty()) throw std::invalid_argument("a milestone needs a name");
  if (source != "crosslab" && source != "entered" && source != "imported")
    throw std::invalid_argument("a milestone's source is crosslab, entered or imported, not " + source);
  const auto venueId = ensureVenue(venue, "cloud");
  auto st = lab_.db().prepare("INSERT INTO timeline(venue_id, milestone, at, note, box_id, source) VALUES (?,?,?,?,?,?)");
  st.bind(1, venueId).bind(2, milestone).bind(3, atIso).bind(4, nonEmpty(note));
  st.bind(5, boxId > 0 ? std::optional<std::int64_t>(boxId) : std::nullopt).bind(6, source).run();
}

std::vector<Milestone> VenueStore::timeline(const std::string& venue) {
  auto st = lab_.db().prepare(
      "SELECT t.milestone, t.at, t.source, IFNULL(t.box_id, 0), IFNULL(t.note, '') FROM timeline t "
      "JOIN venues v ON v.id = t.venue_id WHERE v.name = ? ORDER BY t.at, t.id");
  st.bind(1, venue);
  std::vector<Milestone> out;
  while (st.step()) out.push_back({st.text(0), parseUtc(st.text(1)).value_or(0), st.text(2), st.int64(3), st.text(4)});
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

bool VenueStore::noteLifeMilestone(const BoxRow& box, const std::string& milestone, const std::string& note,
                                   const std::string& atIso) {
  if (!atIso.empty() && !parseUtc(atIso)) throw std::invalid_argument("not an ISO-8601 UTC time: " + atIso);
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto st = db.prepare("SELECT count(*) FROM timeline WHERE box_id = ? AND milestone = ?");
  st.bind(1, box.id).bind(2, milestone);
  if (st.step() && st.int64(0) > 0) return false;
  addMilestoneTx(box.venue.empty() ? box.name : box.venue, milestone, atIso.empty() ? store::utcNow() : atIso, note,
                 box.id, "crosslab");
  tx.commit();
  return true;
}

std::int64_t VenueStore::recordProbe(const ProbeRow& probe, const std::string& accelerators) {
  if (probe.venue.empty()) throw std::invalid_argument("a probe needs a venue");
  const std::string at = probe.at.empty() ? store::utcNow() : probe.at;
  if (!parseUtc(at)) throw std::invalid_argument("not an ISO-8601 UTC time: " + at);
  auto& db = lab_.db();
  store::Transaction tx(db);
  const auto venueId = ensureVenue(probe.venue, "cloud", probe.venue);
  auto ins = db.prepare(
      "INSERT INTO probes(venue_id, at, availability, price_per_hour, offers_json, note) VALUES (?,?,?,?,?,?)");
  ins.bind(1, venueId).bind(2, at).bind(3, probe.availability).bind(4, probe.pricePerHour);
  ins.bind(5, probe.offersJson.empty() ? std::string("[]") : probe.offersJson).bind(6, nonEmpty(probe.note)).run();
  const auto id = db.lastInsertId();
  auto up = db.prepare(
      "UPDATE venues SET availability = ?, price_per_hour = ?, accelerator = COALESCE(?, accelerator), "
      "probed_at = ?, notes = ? WHERE id = ?");
  up.bind(1, probe.availability).bind(2, probe.pricePerHour).bind(3, nonEmpty(accelerators)).bind(4, at);
  up.bind(5, nonEmpty(probe.note)).bind(6, venueId).run();
  tx.commit();
  return id;
}

std::vector<ProbeRow> VenueStore::probes(const std::string& venue) {
  auto st = lab_.db().prepare(
      "SELECT p.id, v.name, p.at, p.availability, p.price_per_hour, p.offers_json, IFNULL(p.note, '') FROM probes p "
      "JOIN venues v ON v.id = p.venue_id WHERE v.name = ? ORDER BY p.at, p.id");
  st.bind(1, venue);
  std::vector<ProbeRow> out;
  while (st.step()) out.push_back({st.int64(0), st.text(1), st.text(2), st.text(3), st.optReal(4), st.text(5), st.text(6)});
  return out;
}

}  // namespace crosslab::venues
