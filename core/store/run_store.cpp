#include "core/store/run_store.h"

#include <filesystem>

#include "core/store/lab_store.h"

namespace crosslab::store {
namespace {

using train::RunStatus;

constexpr const char* kSummarySelect = R"sql(
    SELECT r.id, r.name, r.kind, r.engine, coalesce(r.model, ''), coalesce(v.name, 'local'), r.status,
           coalesce(r.status_reason, ''), coalesce(r.run_dir, ''), coalesce(r.started_at, ''),
           coalesce(r.ended_at, ''), r.total_steps,
           (SELECT max(step) FROM metrics m WHERE m.run_id = r.id),
           (SELECT loss FROM metrics m WHERE m.run_id = r.id AND loss IS NOT NULL ORDER BY step DESC LIMIT 1),
           (SELECT avg(tokens_per_s) FROM metrics m WHERE m.run_id = r.id AND tokens_per_s IS NOT NULL),
           r.box_id, coalesce(r.recipe_json, ''), coalesce(r.launch_json, '')
    FROM runs r LEFT JOIN venues v ON v.id = r.venue_id )sql";

RunSummary summaryAt(Statement& st) {
  RunSummary r;
  r.id = st.int64(0);
  r.name = st.text(1);
  r.kind = st.text(2);
  r.engine = st.text(3);
  r.model = st.text(4);
  r.venue = st.text(5);
  r.status = st.text(6);
  r.state = train::runStatusFromString(r.status).value_or(RunStatus::Pending);
  r.statusReason = st.text(7);
  r.runDir = st.text(8);
  r.startedAt = st.text(9);
  r.endedAt = st.text(10);
  r.totalSteps = st.optInt64(11);
  r.lastStep = st.optInt64(12);
  r.lastLoss = st.optReal(13);
  r.tokensPerSecond = st.optReal(14);
  r.boxId = st.optInt64(15);
  r.recipeJson = st.text(16);
  r.launchJson = st.text(17);
  return r;
}

void requireRun(Database& db, std::int64_t runId) {
  auto st = db.prepare("SELECT count(*) FROM runs WHERE id = ?");
  st.bind(1, runId);
  if (!st.step() || st.int64(0) != 1) throw StoreError("no run with id " + std::to_string(runId));
}

}  // namespace

std::string normalRunDir(const std::string& dir) {
  if (dir.empty()) return dir;
  std::error_code ec;
  auto abs = std::filesystem::absolute(dir, ec);
  if (ec) return dir;
  std::string s = abs.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::optional<MetricRow> metricRowOf(const train::StepRecord& r) {
  if (!r.step) return std::nullopt;
  MetricRow m;
  m.step = *r.step;
  m.loss = r.loss;
  m.lr = r.lr;
  m.epoch = r.epoch;
  m.evalLoss = r.evalLoss;
  m.wallSeconds = r.elapsedSeconds;
  m.tokensPerSecond = r.throughput;
  m.tokens = r.totalTokens;
  return m;
}

RunStore::RunStore(LabStore& lab) : lab_(lab) {}

std::int64_t RunStore::requestCreate(const NewRun& run) {
  auto& db = lab_.db();
  if (run.name.empty()) throw StoreError("a run needs a name");
  Transaction tx(db);
  {
    auto st = db.prepare("SELECT name, coalesce(run_dir, '') FROM runs WHERE name = ? OR (run_dir <> '' AND run_dir = ?)");
    st.bind(1, run.name).bind(2, run.runDir);
    if (st.step()) {
      const bool sameName = st.text(0) == run.name;
      throw RunConflict(sameName ? "the lab already has a run named '" + run.name + "'"
                                 : "the lab already has a run in " + run.runDir + " ('" + st.text(0) + "')");
    }
  }
  auto st = db.prepare(
      "INSERT INTO runs(name, kind, engine, model, total_steps, run_dir, recipe_json, status, box_id, venue_id, "
      "launch_json) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)");
  st.bind(1, run.name).bind(2, run.kind).bind(3, run.engine).bind(4, run.model).bind(5, run.totalSteps);
  st.bind(6, run.runDir).bind(7, run.recipeJson).bind(8, run.boxId).bind(9, run.venueId);
  if (run.launchJson.empty()) st.bindNull(10); else st.bind(10, run.launchJson);
  st.run();
  const auto id = db.lastInsertId();
  tx.commit();
  return id;
}

bool RunStore::requestStatus(std::int64_t runId, RunStatus to, const std::string& reason) {
  auto& db = lab_.db();
  Transaction tx(db);
  auto cur = db.prepare("SELECT status FROM runs WHERE id = ?");
  cur.bind(1, runId);
  if (!cur.step()) throw StoreError("no run with id " + std::to_string(runId));
  const auto from = train::runStatusFromString(cur.text(0)).value_or(RunStatus::Pending);
  if (!train::transitionAllowed(from, to)) return false;  // the transaction rolls back: nothing changed
  const bool ended = train::isTerminal(to);
  auto st = db.prepare(
      "UPDATE runs SET status = ?, status_reason = ?, "
      "started_at = CASE WHEN ? AND started_at IS NULL THEN ? ELSE started_at END, "
      "ended_at = CASE WHEN ? THEN ? WHEN ? THEN NULL ELSE ended_at END WHERE id = ?");
  const std::string now = utcNow();
  st.bind(1, train::toString(to)).bind(2, reason).bind(3, to == RunStatus::Running ? 1 : 0).bind(4, now);
  st.bind(5, ended ? 1 : 0).bind(6, now).bind(7, to == RunStatus::Pending ? 1 : 0).bind(8, runId);
  st.run();
  tx.commit();
  return true;
}

bool RunStore::requestReason(std::int64_t runId, RunStatus status, const std::string& expected,
                             const std::string& reason) {
  auto& db = lab_.db();
  Transaction tx(db);
  auto st = db.prepare("UPDATE runs SET status_reason = ? WHERE id = ? AND status = ? AND coalesce(status_reason, '') = ?");
  st.bind(1, reason).bind(2, runId).bind(3, train::toString(status)).bind(4, expected);
  st.run();
  const bool changed = db.scalarInt("SELECT changes()") == 1;
  tx.commit();
  return changed;
}

void RunStore::requestPlan(std::int64_t runId, std::optional<std::int64_t> totalSteps, const std::string& recipeJson) {
  auto& db = lab_.db();
  Transaction tx(db);
  auto st = db.prepare("UPDATE runs SET total_steps = ?, recipe_json = ? WHERE id = ?");
  st.bind(1, totalSteps).bind(2, recipeJson).bind(3, runId);
  st.run();
  if (db.scalarInt("SELECT changes()") != 1) throw StoreError("no run with id " + std::to_string(runId));
  tx.commit();
}

void RunStore::requestLaunch(std::int64_t runId, const std::string& launchJson) {
  auto& db = lab_.db();
  Transaction tx(db);
  auto st = db.prepare("UPDATE runs SET launch_json = ? WHERE id = ?");
  st.bind(1, launchJson).bind(2, runId);
  st.run();
  if (db.scalarInt("SELECT changes()") != 1) throw StoreError("no run with id " + std::to_string(runId));
  tx.commit();
}

void RunStore::appendSteps(std::int64_t runId, const std::vector<train::StepRecord>& steps) {
  std::vector<MetricRow> rows;
  for (const auto& s : steps)
    if (auto m = metricRowOf(s); m && (m->loss || m->evalLoss)) rows.push_back(*m);
  if (!rows.empty()) appendMetrics(runId, rows);
}

void RunStore::appendMetrics(std::int64_t runId, const std::vector<MetricRow>& rows) {
  auto& db = lab_.db();
  Transaction tx(db);
  requireRun(db, runId);
  std::int64_t seq = 0;
  {
    auto st = db.prepare("SELECT coalesce(max(seq), 0) FROM metrics WHERE run_id = ?");
    st.bind(1, runId);
    if (st.step()) seq = st.int64(0);
  }
  // A row written again keeps what the new write leaves out (a step's loss when its eval
  // loss arrives later) and takes the next seq, so readers by seq see it again.
  auto st = db.prepare(R"sql(
      INSERT INTO metrics(run_id, step, loss, lr, epoch, eval_loss, tokens, wall_s, tokens_per_s, seq)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(run_id, step) DO UPDATE SET
        loss = coalesce(excluded.loss, loss), lr = coalesce(excluded.lr, lr),
        epoch = coalesce(excluded.epoch, epoch), eval_loss = coalesce(excluded.eval_loss, eval_loss),
        tokens = coalesce(excluded.tokens, tokens), wall_s = coalesce(excluded.wall_s, wall_s),
        tokens_per_s = coalesce(excluded.tokens_per_s, tokens_per_s), seq = excluded.seq)sql");
  for (const auto& r : rows) {
    st.bind(1, runId).bind(2, r.step).bind(3, r.loss).bind(4, r.lr).bind(5, r.epoch);
    st.bind(6, r.evalLoss).bind(7, r.tokens).bind(8, r.wallSeconds).bind(9, r.tokensPerSecond).bind(10, ++seq);
    st.run();
    st.reset();
  }
  tx.commit();
}

std::vector<RunSummary> RunStore::query(const std::string& where, const std::string& arg,
                                        std::optional<std::int64_t> id) {
  auto st = lab_.db().prepare(std::string(kSummarySelect) + where);
  if (id) st.bind(1, *id);
  else if (!arg.empty() || where.find('?') != std::string::npos) st.bind(1, arg);
  std::vector<RunSummary> out;
  while (st.step()) out.push_back(summaryAt(st));
  return out;
}

std::optional<RunSummary> RunStore::byId(std::int64_t runId) {
  auto rows = query("WHERE r.id = ?", {}, runId);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<RunSummary> RunStore::byDir(const std::string& runDir) {
  auto rows = query("WHERE r.run_dir = ? ORDER BY r.id DESC LIMIT 1", runDir, std::nullopt);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::optional<RunSummary> RunStore::byName(const std::string& name) {
  auto rows = query("WHERE r.name = ? ORDER BY r.id DESC LIMIT 1", name, std::nullopt);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::vector<RunSummary> RunStore::list(const std::string& kind) {
  return query("WHERE r.kind = ? ORDER BY r.id DESC", kind, std::nullopt);
}

std::vector<MetricRow> RunStore::metricsSince(std::int64_t runId, std::int64_t afterSeq) {
  auto st = lab_.db().prepare(
      "SELECT step, loss, lr, epoch, eval_loss, tokens, wall_s, tokens_per_s, seq FROM metrics "
      "WHERE run_id = ? AND seq > ? ORDER BY step");
  st.bind(1, runId).bind(2, afterSeq);
  std::vector<MetricRow> out;
  while (st.step()) {
    MetricRow m;
    m.step = st.int64(0);
    m.loss = st.optReal(1);
    m.lr = st.optReal(2);
    m.epoch = st.optReal(3);
    m.evalLoss = st.optReal(4);
    m.tokens = st.optInt64(5);
    m.wallSeconds = st.optReal(6);
    m.tokensPerSecond = st.optReal(7);
    m.seq = st.int64(8);
    out.push_back(m);
  }
  return out;
}

constexpr const char* kLastChoiceKey = "runs.new_run.last";

std::string RunStore::lastChoice() {
  auto st = lab_.db().prepare("SELECT value FROM settings WHERE key = ?");
  st.bind(1, kLastChoiceKey);
  return st.step() ? st.text(0) : std::string();
}

void RunStore::requestLastChoice(const std::string& json) {
  Transaction tx(lab_.db());
  auto st = lab_.db().prepare("INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  st.bind(1, kLastChoiceKey).bind(2, json).run();
  tx.commit();
}

}  // namespace crosslab::store
