#include "core/ledger/friction_log.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/ledger/lab_ledger.h"
#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"
#include "core/venues/meter.h"

namespace crosslab::ledger {
namespace {

struct CategoryName {
  FrictionCategory category;
  std::string_view key, label;
};
constexpr std::array<CategoryName, 5> kCategories{{{FrictionCategory::VenueHygiene, "venue_hygiene", "venue hygiene"},
                                                   {FrictionCategory::StackLag, "stack_lag", "stack/version lag"},
                                                   {FrictionCategory::OwnError, "own_error", "own error"},
                                                   {FrictionCategory::Hardware, "hardware", "hardware"},
                                                   {FrictionCategory::Other, "other", "other"}}};

const CategoryName& entryOf(FrictionCategory c) {
  for (const auto& e : kCategories)
    if (e.category == c) return e;
  return kCategories.back();
}

void validate(const FrictionEntry& e) {
  if (e.title.find_first_not_of(" \t\n") == std::string::npos) throw std::invalid_argument("a friction entry needs a title");
  if (e.minutes && !(std::isfinite(*e.minutes) && *e.minutes >= 0))
    throw std::invalid_argument("minutes lost are zero or more");
  if (e.usd && !(std::isfinite(*e.usd) && *e.usd >= 0)) throw std::invalid_argument("money lost is zero or more dollars");
  if (!e.at.empty() && !venues::parseUtc(e.at)) throw std::invalid_argument("not an ISO-8601 UTC time: " + e.at);
}

constexpr const char* kSelect =
    "SELECT f.id, f.at, f.title, f.category, f.minutes, f.usd, f.box_id, f.run_id, IFNULL(b.name, ''), "
    "IFNULL(r.name, ''), IFNULL(f.cause, ''), IFNULL(f.fix, ''), f.ecosystem_specific, IFNULL(f.origin, '') "
    "FROM friction f LEFT JOIN boxes b ON b.id = f.box_id LEFT JOIN runs r ON r.id = f.run_id ";

FrictionEntry readEntry(store::Statement& st) {
  FrictionEntry e;
  e.id = st.int64(0);
  e.at = st.text(1);
  e.title = st.text(2);
  e.category = frictionCategoryFrom(st.text(3)).value_or(FrictionCategory::Other);
  e.minutes = st.optReal(4);
  e.usd = st.optReal(5);
  e.boxId = st.optInt64(6);
  e.runId = st.optInt64(7);
  e.box = st.text(8);
  e.run = st.text(9);
  e.cause = st.text(10);
  e.fix = st.text(11);
  e.ecosystemSpecific = st.int64(12) != 0;
  e.origin = st.text(13);
  return e;
}

std::optional<std::string> nonEmpty(const std::string& s) { return s.empty() ? std::nullopt : std::optional(s); }

}  // namespace

std::string_view toKey(FrictionCategory c) { return entryOf(c).key; }
std::string_view toLabel(FrictionCategory c) { return entryOf(c).label; }
std::optional<FrictionCategory> frictionCategoryFrom(std::string_view text) {
  for (const auto& e : kCategories)
    if (e.key == text || e.label == text) return e.category;
  return std::nullopt;
}
const std::vector<FrictionCategory>& allFrictionCategories() {
  static const std::vector<FrictionCategory> all = {FrictionCategory::VenueHygiene, FrictionCategory::StackLag,
                                                    FrictionCategory::OwnError, FrictionCategory::Hardware,
                                                    FrictionCategory::Other};
  return all;
}

FrictionLog::FrictionLog(store::LabStore& lab) : lab_(lab) {}

std::int64_t FrictionLog::requestAdd(const FrictionEntry& e) {
  validate(e);
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto st = db.prepare(
      "INSERT INTO friction(at, box_id, run_id, title, cause, fix, minutes, usd, category, ecosystem_specific, origin) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, e.at.empty() ? isoUtc(epochNow()) : e.at).bind(2, e.boxId).bind(3, e.runId).bind(4, e.title);
  st.bind(5, nonEmpty(e.cause)).bind(6, nonEmpty(e.fix)).bind(7, e.minutes).bind(8, e.usd);
  st.bind(9, std::string(toKey(e.category))).bind(10, e.ecosystemSpecific ? 1 : 0).bind(11, nonEmpty(e.origin)).run();
  const auto id = db.lastInsertId();
  tx.commit();
  return id;
}

void FrictionLog::requestEdit(std::int64_t id, const FrictionEdit& edit) {
  auto current = find(id);
  if (!current) throw std::invalid_argument("no friction entry with id " + std::to_string(id));
  FrictionEntry e = *current;
  if (edit.title) e.title = *edit.title;
  if (edit.cause) e.cause = *edit.cause;
  if (edit.fix) e.fix = *edit.fix;
  if (edit.at) e.at = *edit.at;
  if (edit.category) e.category = *edit.category;
  if (edit.minutes) e.minutes = *edit.minutes;
  if (edit.usd) e.usd = *edit.usd;
  if (edit.ecosystemSpecific) e.ecosystemSpecific = *edit.ecosystemSpecific;
  if (edit.boxId) e.boxId = *edit.boxId;
  if (edit.runId) e.runId = *edit.runId;
  validate(e);
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto st = db.prepare(
      "UPDATE friction SET at = ?, title = ?, cause = ?, fix = ?, minutes = ?, usd = ?, category = ?, "
      "ecosystem_specific = ?, box_id = ?, run_id = ? WHERE id = ?");
  st.bind(1, e.at).bind(2, e.title).bind(3, nonEmpty(e.cause)).bind(4, nonEmpty(e.fix)).bind(5, e.minutes);
  st.bind(6, e.usd).bind(7, std::string(toKey(e.category))).bind(8, e.ecosystemSpecific ? 1 : 0);
  st.bind(9, e.boxId).bind(10, e.runId).bind(11, id).run();
  tx.commit();
}

std::vector<FrictionEntry> FrictionLog::list() {
  auto st = lab_.db().prepare(std::string(kSelect) + "ORDER BY f.at, f.id");
  std::vector<FrictionEntry> out;
  while (st.step()) out.push_back(readEntry(st));
  return out;
}

std::optional<FrictionEntry> FrictionLog::find(std::int64_t id) {
  auto st = lab_.db().prepare(std::string(kSelect) + "WHERE f.id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return readEntry(st);
}

std::int64_t FrictionLog::ecosystemSpecificCount() {
  return lab_.db().scalarInt("SELECT count(*) FROM friction WHERE ecosystem_specific <> 0");
}

std::optional<FrictionEntry> FrictionLog::suggestFromRun(std::int64_t runId) {
  auto st = lab_.db().prepare(
      "SELECT r.name, r.status, IFNULL(r.status_reason, ''), IFNULL(r.started_at, ''), IFNULL(r.ended_at, ''), "
      "COALESCE(w.box_id, r.box_id), IFNULL(w.started_at, ''), IFNULL(w.ended_at, '') "
      "FROM runs r LEFT JOIN box_work w ON w.id = (SELECT max(id) FROM box_work WHERE run_id = r.id AND kind <> 'serve') "
      "WHERE r.id = ?");
  st.bind(1, runId);
  if (!st.step()) return std::nullopt;
  const std::string name = st.text(0), status = st.text(1), reason = st.text(2);
  if (status != "failed" && status != "stalled") return std::nullopt;
  // The run's time on its box when it had one (the ledger's debug), else its own times.
  const std::string startIso = !st.text(6).empty() ? st.text(6) : st.text(3);
  const std::string endIso = !st.text(6).empty() ? st.text(7) : st.text(4);
  FrictionEntry e;
  e.runId = runId;
  e.boxId = st.optInt64(5);
  e.run = name;
  e.title = "run " + name + " " + status;
  e.cause = reason;
  e.origin = "run " + std::to_string(runId) + " " + status;
  const auto start = venues::parseUtc(startIso);
  const double end = venues::parseUtc(endIso).value_or(epochNow());
  if (start) e.minutes = std::max(0.0, end - *start) / 60.0;
  if (e.boxId && e.minutes) {
    if (const auto life = readLife(lab_, *e.boxId)) {
      e.box = life->box;
      e.usd = *e.minutes * life->pricePerHour / 60.0;
    }
  }
  return e;
}

std::optional<FrictionEntry> FrictionLog::suggestFromWatchdog(std::int64_t runId, const std::string& alert) {
  auto e = suggestFromRun(runId);
  if (!e) {
    auto st = lab_.db().prepare("SELECT name FROM runs WHERE id = ?");
    st.bind(1, runId);
    if (!st.step()) return std::nullopt;
    e = FrictionEntry{};
    e->runId = runId;
    e->run = st.text(0);
  }
  e->title = "watchdog: run " + e->run;
  e->cause = alert;
  e->origin = "watchdog run " + std::to_string(runId);
  return e;
}

std::optional<FrictionEntry> FrictionLog::suggestFromBoxLife(std::int64_t boxId) {
  const auto life = readLife(lab_, boxId);
  if (!life || life->alive()) return std::nullopt;
  const auto l = derive(*life, *life->deleted);
  if (l.minutes.debug <= 0) return std::nullopt;
  FrictionEntry e;
  e.boxId = boxId;
  e.box = life->box;
  e.title = "debug time on " + life->box;
  e.minutes = l.minutes.debug;
  e.usd = l.usd.debug;
  for (const auto& w : life->work)
    if (countsAsWork(w.kind) && w.status != WorkStatus::Finished)
      e.cause += (e.cause.empty() ? "" : "; ") + w.name + " " + std::string(toString(w.status)) +
                 (w.reason.empty() ? "" : " (" + w.reason + ")");
  e.origin = "box " + std::to_string(boxId) + " deleted with debug time";
  return e;
}

std::vector<FrictionEntry> FrictionLog::openSuggestions() {
  std::set<std::string> taken;
  for (const auto& f : list())
    if (!f.origin.empty()) taken.insert(f.origin);
  std::vector<std::pair<std::string, FrictionEntry>> offers;  // (when, entry)
  {
    auto st = lab_.db().prepare(
        "SELECT id, COALESCE(ended_at, started_at, '') FROM runs WHERE status IN ('failed', 'stalled')");
    std::vector<std::pair<std::int64_t, std::string>> runs;
    while (st.step()) runs.emplace_back(st.int64(0), st.text(1));
    for (const auto& [id, when] : runs)
      if (auto e = suggestFromRun(id); e && !taken.count(e->origin)) offers.emplace_back(when, *e);
  }
  for (const auto& life : readLives(lab_))
    if (!life.alive())
      if (auto e = suggestFromBoxLife(life.boxId); e && !taken.count(e->origin))
        offers.emplace_back(isoUtc(*life.deleted), *e);
  std::stable_sort(offers.begin(), offers.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<FrictionEntry> out;
  for (auto& o : offers) out.push_back(std::move(o.second));
  return out;
}

}  // namespace crosslab::ledger
