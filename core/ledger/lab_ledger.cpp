#include "core/ledger/lab_ledger.h"

#include <algorithm>
#include <stdexcept>

#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"
#include "core/venues/meter.h"

namespace crosslab::ledger {
namespace {

constexpr const char* kLifeColumns =
    "SELECT b.id, b.name, v.name, COALESCE(NULLIF(v.provider, ''), v.name), IFNULL(b.gpu_model, ''), "
    "IFNULL(b.gpu_count, 0), IFNULL(b.price_per_hour, 0), IFNULL(b.min_minutes, 0), b.provisioned_at, "
    "IFNULL(b.deleted_at, '') FROM boxes b JOIN venues v ON v.id = b.venue_id WHERE b.provisioned_at IS NOT NULL ";

double timeOf(const std::string& iso, const char* what) {
  const auto t = venues::parseUtc(iso);
  if (!t) throw std::runtime_error(std::string("the lab holds a ") + what + " time that is not ISO-8601 UTC: '" + iso + "'");
  return *t;
}

void readWork(store::Database& db, BoxLife& life) {
  auto st = db.prepare(
      "SELECT id, kind, name, started_at, ended_at, status, IFNULL(reason, ''), run_id, benchmark_id "
      "FROM box_work WHERE box_id = ? ORDER BY id");
  st.bind(1, life.boxId);
  while (st.step()) {
    WorkItem w;
    w.id = st.int64(0);
    w.kind = workKindFrom(st.text(1)).value_or(WorkKind::Train);
    w.name = st.text(2);
    w.start = timeOf(st.text(3), "work start");
    if (!st.isNull(4)) w.end = timeOf(st.text(4), "work end");
    w.status = workStatusFrom(st.text(5)).value_or(WorkStatus::Failed);
    w.reason = st.text(6);
    w.runId = st.optInt64(7);
    w.benchmarkId = st.optInt64(8);
    life.work.push_back(std::move(w));
  }
  std::stable_sort(life.work.begin(), life.work.end(),
                   [](const WorkItem& a, const WorkItem& b) { return a.start < b.start; });
  auto tr = db.prepare(
      "SELECT id, direction, what, bytes, started_at, ended_at FROM box_transfers WHERE box_id = ? ORDER BY id");
  tr.bind(1, life.boxId);
  while (tr.step()) {
    Transfer t;
    t.id = tr.int64(0);
    t.direction = directionFrom(tr.text(1)).value_or(Direction::Push);
    t.what = tr.text(2);
    t.bytes = tr.int64(3);
    t.start = timeOf(tr.text(4), "transfer start");
    t.end = timeOf(tr.text(5), "transfer end");
    life.transfers.push_back(std::move(t));
  }
  std::stable_sort(life.transfers.begin(), life.transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return a.start < b.start; });
}

BoxLife readLifeRow(store::Statement& st) {
  BoxLife l;
  l.boxId = st.int64(0);
  l.box = st.text(1);
  l.venue = st.text(2);
  l.provider = st.text(3);
  l.gpu = st.text(4);
  l.gpus = static_cast<int>(st.int64(5));
  l.pricePerHour = st.real(6);
  l.minMinutes = static_cast<int>(st.int64(7));
  l.provisioned = timeOf(st.text(8), "provisioning");
  const std::string deleted = st.text(9);
  if (!deleted.empty()) l.deleted = timeOf(deleted, "deletion");
  return l;
}

std::string stamp(const std::string& atIso) { return atIso.empty() ? isoUtc(epochNow()) : atIso; }

}  // namespace

std::vector<BoxLife> readLives(store::LabStore& lab) {
  auto& db = lab.db();
  auto st = db.prepare(std::string(kLifeColumns) + "ORDER BY b.id");
  std::vector<BoxLife> lives;
  while (st.step()) lives.push_back(readLifeRow(st));
  for (auto& l : lives) readWork(db, l);
  std::stable_sort(lives.begin(), lives.end(),
                   [](const BoxLife& a, const BoxLife& b) { return a.provisioned < b.provisioned; });
  return lives;
}

std::optional<BoxLife> readLife(store::LabStore& lab, std::int64_t boxId) {
  auto& db = lab.db();
  auto st = db.prepare(std::string(kLifeColumns) + "AND b.id = ?");
  st.bind(1, boxId);
  if (!st.step()) return std::nullopt;
  BoxLife l = readLifeRow(st);
  readWork(db, l);
  return l;
}

LedgerTotals sumLives(const std::vector<LifeRow>& lives) {
  LedgerTotals t;
  auto add = [](Split& into, const Split& s) {
    into.used += s.used;
    into.billed += s.billed;
    into.compute += s.compute;
    into.staging += s.staging;
    into.debug += s.debug;
    into.idle += s.idle;
  };
  for (const auto& r : lives) {
    add(t.minutes, r.ledger.minutes);
    add(t.usd, r.ledger.usd);
  }
  if (t.minutes.compute > 1e-9) t.ratio = (t.minutes.staging + t.minutes.debug) / t.minutes.compute;
  return t;
}

LabLedger readLedger(store::LabStore& lab, double now) {
  LabLedger out;
  for (auto& life : readLives(lab)) {
    LifeLedger l = derive(life, now);
    out.lives.push_back({std::move(life), l});
  }
  auto& db = lab.db();
  // Box lives are derived, not booked: the ledger table's compute/staging rows of older
  // labs (one per box, written on delete) are superseded by the derivation.
  auto st = db.prepare(
      "SELECT id, at, category, usd, IFNULL(note, '') FROM ledger WHERE category IN ('api', 'other') ORDER BY at, id");
  while (st.step()) out.other.push_back({st.int64(0), st.text(1), st.text(2), st.real(3), st.text(4)});
  auto cr = db.prepare("SELECT id, at, usd, IFNULL(note, '') FROM credits ORDER BY at, id");
  while (cr.step()) out.credits.push_back({cr.int64(0), cr.text(1), cr.real(2), cr.text(3)});
  out.totals = sumLives(out.lives);
  for (const auto& o : out.other) out.totals.otherUsd += o.usd;
  for (const auto& c : out.credits) out.totals.creditUsd += c.usd;
  return out;
}

std::optional<StagingForecast> stagingForecastFor(store::LabStore& lab, const std::string& venue,
                                                  double pricePerHour) {
  const auto lives = readLives(lab);
  for (auto it = lives.rbegin(); it != lives.rend(); ++it)
    if (it->venue == venue && !it->alive()) return forecastStaging(*it, pricePerHour);
  return std::nullopt;
}

std::int64_t requestAddOtherSpend(store::LabStore& lab, const std::string& category, double usd,
                                  const std::string& note, const std::string& atIso) {
  if (category != "api" && category != "other") throw std::invalid_argument("other spend is 'api' or 'other'");
  if (!(usd >= 0)) throw std::invalid_argument("spend is zero or more dollars");
  const std::string at = stamp(atIso);
  if (!venues::parseUtc(at)) throw std::invalid_argument("not an ISO-8601 UTC time: " + at);
  auto& db = lab.db();
  store::Transaction tx(db);
  auto st = db.prepare("INSERT INTO ledger(box_id, at, category, usd, minutes, note) VALUES (NULL, ?, ?, ?, NULL, ?)");
  st.bind(1, at).bind(2, category).bind(3, usd).bind(4, note).run();
  const auto id = db.lastInsertId();
  tx.commit();
  return id;
}

std::int64_t requestAddCredit(store::LabStore& lab, double usd, const std::string& note, const std::string& atIso) {
  if (!(usd >= 0)) throw std::invalid_argument("a credit is zero or more dollars");
  const std::string at = stamp(atIso);
  if (!venues::parseUtc(at)) throw std::invalid_argument("not an ISO-8601 UTC time: " + at);
  auto& db = lab.db();
  store::Transaction tx(db);
  auto st = db.prepare("INSERT INTO credits(at, usd, note) VALUES (?, ?, ?)");
  st.bind(1, at).bind(2, usd).bind(3, note).run();
  const auto id = db.lastInsertId();
  tx.commit();
  return id;
}

}  // namespace crosslab::ledger
