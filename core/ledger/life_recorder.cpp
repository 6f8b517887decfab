#include "core/ledger/life_recorder.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/ledger/lab_ledger.h"
#include "core/store/lab_store.h"
#include "core/venues/meter.h"

namespace crosslab::ledger {

std::string_view eventType(LifeEvent event) {
  switch (event) {
    case LifeEvent::Provisioned: return "life.provisioned";
    case LifeEvent::Ready: return "life.ready";
    case LifeEvent::Transfer: return "life.transfer";
    case LifeEvent::WorkStart: return "life.work_start";
    case LifeEvent::WorkEnd: return "life.work_end";
    case LifeEvent::ServeStart: return "life.serve_start";
    case LifeEvent::ServeStop: return "life.serve_stop";
    case LifeEvent::Deleted: return "life.deleted";
  }
  return "life.unknown";
}

double epochNow() {
  using namespace std::chrono;
  return static_cast<double>(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count()) / 1000.0;
}

std::string isoUtc(double epochSeconds) {
  // Milliseconds when there are any (a loopback push takes less than a second).
  const auto ms = static_cast<long long>(std::llround(epochSeconds * 1000.0));
  const long long whole = ms / 1000 - (ms % 1000 < 0 ? 1 : 0);
  const long long frac = ms - whole * 1000;
  std::string out = venues::formatUtc(static_cast<double>(whole));
  if (frac == 0) return out;
  char buf[8];
  std::snprintf(buf, sizeof buf, ".%03lld", frac);
  out.insert(out.size() - 1, buf);
  return out;
}

void writeLifeEvent(store::Database& db, std::int64_t boxId, LifeEvent event, double at, const std::string& message,
                    const std::string& dataJson) {
  auto st = db.prepare("INSERT INTO events(run_id, box_id, at, type, message, data_json) VALUES (NULL, ?, ?, ?, ?, ?)");
  st.bind(1, boxId).bind(2, isoUtc(at)).bind(3, std::string(eventType(event))).bind(4, message);
  if (dataJson.empty()) st.bindNull(5); else st.bind(5, dataJson);
  st.run();
}

namespace {

void requireBox(store::Database& db, std::int64_t boxId) {
  auto st = db.prepare("SELECT count(*) FROM boxes WHERE id = ?");
  st.bind(1, boxId);
  if (!st.step() || st.int64(0) == 0) throw std::invalid_argument("no box with id " + std::to_string(boxId));
}

nlohmann::json ledgerJson(const LifeLedger& l) {
  const auto& m = l.minutes;
  return {{"used_minutes", m.used},       {"billed_minutes", m.billed}, {"compute_minutes", m.compute},
          {"staging_minutes", m.staging}, {"debug_minutes", m.debug},   {"idle_minutes", m.idle},
          {"billed_usd", l.usd.billed}};
}

}  // namespace

LifeRecorder::LifeRecorder(store::LabStore& lab) : lab_(lab) {}

void LifeRecorder::provisioned(std::int64_t boxId, double at) {
  auto& db = lab_.db();
  store::Transaction tx(db);
  requireBox(db, boxId);
  auto st = db.prepare("UPDATE boxes SET provisioned_at = ? WHERE id = ?");
  st.bind(1, isoUtc(at)).bind(2, boxId).run();
  writeLifeEvent(db, boxId, LifeEvent::Provisioned, at, "provisioned");
  tx.commit();
}

void LifeRecorder::ready(std::int64_t boxId, double at) {
  auto& db = lab_.db();
  store::Transaction tx(db);
  requireBox(db, boxId);
  auto st = db.prepare("UPDATE boxes SET ready_at = ? WHERE id = ?");
  st.bind(1, isoUtc(at)).bind(2, boxId).run();
  writeLifeEvent(db, boxId, LifeEvent::Ready, at, "ready");
  tx.commit();
}

std::optional<LifeLedger> bookEndedLife(store::LabStore& lab, std::int64_t boxId, double at,
                                        const std::string& finalState) {
  auto& db = lab.db();
  auto open = db.prepare(
      "UPDATE box_work SET status = CASE kind WHEN 'serve' THEN 'finished' ELSE 'stopped' END, ended_at = ?, "
      "reason = CASE kind WHEN 'serve' THEN reason ELSE 'box deleted' END WHERE box_id = ? AND status = 'running'");
  open.bind(1, isoUtc(at)).bind(2, boxId).run();
  const auto life = readLife(lab, boxId);
  std::optional<LifeLedger> result;
  if (life) result = derive(*life, at);
  writeLifeEvent(db, boxId, LifeEvent::Deleted, at, finalState, result ? ledgerJson(*result).dump() : std::string{});
  return result;
}

std::int64_t LifeRecorder::insertWork(std::int64_t boxId, WorkKind kind, const std::string& name, double at,
                                      const WorkLinks& links, LifeEvent event) {
  auto& db = lab_.db();
  store::Transaction tx(db);
  requireBox(db, boxId);
  auto st = db.prepare(
      "INSERT INTO box_work(box_id, kind, name, run_id, benchmark_id, started_at, status) VALUES (?,?,?,?,?,?,'running')");
  st.bind(1, boxId).bind(2, std::string(toString(kind))).bind(3, name).bind(4, links.runId);
  st.bind(5, links.benchmarkId).bind(6, isoUtc(at)).run();
  const auto id = db.lastInsertId();
  writeLifeEvent(db, boxId, event, at, std::string(toString(kind)) + " " + name,
                 nlohmann::json{{"work_id", id}, {"kind", toString(kind)}}.dump());
  tx.commit();
  return id;
}

bool LifeRecorder::endWork(std::int64_t workId, WorkStatus status, double at, const std::string& reason,
                           LifeEvent event) {
  if (status == WorkStatus::Running) throw std::invalid_argument("work ends finished, failed, stalled or stopped");
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto sel = db.prepare("SELECT box_id, kind, name, started_at FROM box_work WHERE id = ? AND status = 'running'");
  sel.bind(1, workId);
  if (!sel.step()) return false;
  const auto boxId = sel.int64(0);
  const std::string kind = sel.text(1), name = sel.text(2);
  // An end before the start (clock skew between machines) is the start.
  const double start = venues::parseUtc(sel.text(3)).value_or(at);
  const double end = std::max(at, start);
  auto up = db.prepare("UPDATE box_work SET status = ?, ended_at = ?, reason = ? WHERE id = ?");
  up.bind(1, std::string(toString(status))).bind(2, isoUtc(end));
  if (reason.empty()) up.bindNull(3); else up.bind(3, reason);
  up.bind(4, workId).run();
  writeLifeEvent(db, boxId, event, end, kind + " " + name + ": " + std::string(toString(status)),
                 nlohmann::json{{"work_id", workId}, {"status", toString(status)}, {"reason", reason}}.dump());
  tx.commit();
  return true;
}

std::int64_t LifeRecorder::workStarted(std::int64_t boxId, WorkKind kind, const std::string& name, double at,
                                       const WorkLinks& links) {
  if (!countsAsWork(kind)) throw std::invalid_argument("a server is recorded with serveStarted, not as work");
  return insertWork(boxId, kind, name, at, links, LifeEvent::WorkStart);
}

bool LifeRecorder::workEnded(std::int64_t workId, WorkStatus status, double at, const std::string& reason) {
  return endWork(workId, status, at, reason, LifeEvent::WorkEnd);
}

std::optional<std::int64_t> LifeRecorder::openWorkForRun(std::int64_t runId) {
  auto st = lab_.db().prepare(
      "SELECT id FROM box_work WHERE run_id = ? AND status = 'running' AND kind <> 'serve' ORDER BY id DESC LIMIT 1");
  st.bind(1, runId);
  if (!st.step()) return std::nullopt;
  return st.int64(0);
}

std::int64_t LifeRecorder::serveStarted(std::int64_t boxId, const std::string& name, double at,
                                        const WorkLinks& links) {
  return insertWork(boxId, WorkKind::Serve, name, at, links, LifeEvent::ServeStart);
}

bool LifeRecorder::serveStopped(std::int64_t serveId, double at) {
  return endWork(serveId, WorkStatus::Finished, at, {}, LifeEvent::ServeStop);
}

std::int64_t LifeRecorder::transfer(std::int64_t boxId, Direction direction, const std::string& what,
                                    std::int64_t bytes, double start, double end) {
  if (bytes < 0) throw std::invalid_argument("a transfer moves zero or more bytes");
  if (end < start) end = start;
  auto& db = lab_.db();
  store::Transaction tx(db);
  requireBox(db, boxId);
  auto st = db.prepare(
      "INSERT INTO box_transfers(box_id, direction, what, bytes, started_at, ended_at) VALUES (?,?,?,?,?,?)");
  st.bind(1, boxId).bind(2, std::string(toString(direction))).bind(3, what).bind(4, bytes);
  st.bind(5, isoUtc(start)).bind(6, isoUtc(end)).run();
  const auto id = db.lastInsertId();
  writeLifeEvent(db, boxId, LifeEvent::Transfer, end, std::string(toString(direction)) + " " + what,
                 nlohmann::json{{"transfer_id", id}, {"bytes", bytes}, {"seconds", end - start}}.dump());
  tx.commit();
  return id;
}

}  // namespace crosslab::ledger
