#include "core/ledger/life_jsonl.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <map>
#include <set>

#include "core/ledger/lab_ledger.h"
#include "core/ledger/life_recorder.h"
#include "core/report/redactor.h"
#include "core/store/lab_store.h"
#include "core/util/printable.h"
#include "core/venues/meter.h"

namespace crosslab::ledger {
namespace {

using json = nlohmann::json;

// Field checks for one line; each throws ImportError(line, "…") naming the field.
class Fields {
 public:
  Fields(const json& obj, int line, std::string where, std::set<std::string> allowed)
      : obj_(obj), line_(line), where_(std::move(where)) {
    if (!obj.is_object()) fail("is not a JSON object");
    for (const auto& [key, value] : obj.items())
      if (!allowed.count(key)) fail("has an unknown field '" + key + "'");
  }
  [[noreturn]] void fail(const std::string& what) const { throw ImportError(line_, where_ + " " + what); }
  const json& need(const std::string& key) const {
    const auto it = obj_.find(key);
    if (it == obj_.end()) fail("is missing \"" + key + "\"");
    return *it;
  }
  std::string text(const std::string& key, bool nonEmpty) const {
    const auto& v = need(key);
    if (!v.is_string()) fail("\"" + key + "\" is not a string");
    if (nonEmpty && v.get<std::string>().empty()) fail("\"" + key + "\" is empty");
    return v.get<std::string>();
  }
  std::int64_t whole(const std::string& key) const {
    const auto& v = need(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() >
                                                                  static_cast<std::uint64_t>(INT64_MAX)))
      fail("\"" + key + "\" is not a whole number");
    const auto n = v.get<std::int64_t>();
    if (n < 0) fail("\"" + key + "\" is negative");
    return n;
  }
  double number(const std::string& key) const {
    const auto& v = need(key);
    if (!v.is_number()) fail("\"" + key + "\" is not a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0) fail("\"" + key + "\" must be zero or more");
    return d;
  }
  std::optional<double> time(const std::string& key, bool nullable) const {
    const auto& v = need(key);
    if (nullable && v.is_null()) return std::nullopt;
    if (!v.is_string()) fail("\"" + key + "\" is not an ISO-8601 UTC time");
    const auto t = venues::parseUtc(v.get<std::string>());
    if (!t) fail("\"" + key + "\" is not an ISO-8601 UTC time: '" + v.get<std::string>() + "'");
    return t;
  }
  const json& array(const std::string& key) const {
    const auto& v = need(key);
    if (!v.is_array()) fail("\"" + key + "\" is not an array");
    return v;
  }

 private:
  const json& obj_;
  int line_;
  std::string where_;
};

WorkItem parseWork(const json& j, int line, size_t index, bool lifeAlive) {
  const Fields f(j, line, "work[" + std::to_string(index) + "]", {"kind", "name", "start", "end", "status"});
  WorkItem w;
  const std::string kind = f.text("kind", true), status = f.text("status", true);
  const auto k = workKindFrom(kind);
  if (!k) f.fail("has an unknown kind '" + kind + "' (train, bench, eval or serve)");
  const auto s = workStatusFrom(status);
  if (!s) f.fail("has an unknown status '" + status + "' (finished, failed, stalled or stopped)");
  w.kind = *k;
  w.status = *s;
  w.name = f.text("name", false);
  w.start = *f.time("start", false);
  w.end = f.time("end", w.status == WorkStatus::Running);
  if (w.status == WorkStatus::Running && !lifeAlive) f.fail("is running on a life that has ended");
  if (w.status == WorkStatus::Running && w.end) f.fail("is running but has an end");
  if (w.end && *w.end < w.start) f.fail("ends before it starts");
  return w;
}

Transfer parseTransfer(const json& j, int line, size_t index) {
  const Fields f(j, line, "transfers[" + std::to_string(index) + "]", {"direction", "what", "bytes", "start", "end"});
  Transfer t;
  const std::string dir = f.text("direction", true);
  const auto d = directionFrom(dir);
  if (!d) f.fail("has an unknown direction '" + dir + "' (push or pull)");
  t.direction = *d;
  t.what = f.text("what", false);
  t.bytes = f.whole("bytes");
  t.start = *f.time("start", false);
  t.end = *f.time("end", false);
  if (t.end < t.start) f.fail("ends before it starts");
  return t;
}

ParsedLife parseLine(const std::string& text, int line) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number past double's range (out_of_range)
    throw ImportError(line, std::string("is not JSON (") + e.what() + ")");
  }
  const Fields f(j, line, "the life",
                 {"box", "provider", "gpu", "gpus", "price_per_hour", "min_minutes", "provisioned_at", "deleted_at",
                  "work", "transfers"});
  ParsedLife p;
  p.line = line;
  BoxLife& l = p.life;
  l.box = f.text("box", true);
  l.provider = f.text("provider", true);
  l.venue = l.provider;
  l.gpu = f.text("gpu", false);
  const auto gpus = f.whole("gpus");
  if (gpus > 1024) f.fail("\"gpus\" is not a GPU count");
  l.gpus = static_cast<int>(gpus);
  l.pricePerHour = f.number("price_per_hour");
  const auto minMinutes = f.whole("min_minutes");
  if (minMinutes > 525600) f.fail("\"min_minutes\" is more than a year");
  l.minMinutes = static_cast<int>(minMinutes);
  l.provisioned = *f.time("provisioned_at", false);
  l.deleted = f.time("deleted_at", true);
  if (l.deleted && *l.deleted < l.provisioned) f.fail("is deleted before it was provisioned");
  const auto& work = f.array("work");
  for (size_t i = 0; i < work.size(); ++i) l.work.push_back(parseWork(work[i], line, i, l.alive()));
  const auto& transfers = f.array("transfers");
  for (size_t i = 0; i < transfers.size(); ++i) l.transfers.push_back(parseTransfer(transfers[i], line, i));
  return p;
}

bool overlaps(const BoxLife& a, const BoxLife& b) {
  const double inf = std::numeric_limits<double>::infinity();
  return a.provisioned < b.deleted.value_or(inf) && b.provisioned < a.deleted.value_or(inf);
}

std::string boxOf(const report::Redactor* r, const std::string& name) { return r ? r->boxLabel(name) : name; }
std::string textOf(const report::Redactor* r, const std::string& text) { return r ? r->text(text) : text; }

}  // namespace

// One line whatever the input held: field names, kinds and times are quoted from the file
// (a key "\nd" was a line break in the message: fuzz finding).
ImportError::ImportError(int line, const std::string& what)
    : std::runtime_error("line " + std::to_string(line) + ": " + util::printable(what, 400)), line_(line) {}

std::vector<ParsedLife> parseLivesJsonl(std::istream& in) {
  std::vector<ParsedLife> out;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    out.push_back(parseLine(text, line));
  }
  // Lives of one box in the file must not overlap.
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (out[i].life.box == out[j].life.box && overlaps(out[i].life, out[j].life))
        throw ImportError(out[i].line, "the life of " + out[i].life.box + " overlaps its life on line " +
                                           std::to_string(out[j].line));
  return out;
}

size_t importLives(store::LabStore& lab, const std::vector<ParsedLife>& lives) {
  const auto existing = readLives(lab);
  for (const auto& p : lives)
    for (const auto& e : existing)
      if (e.box == p.life.box && overlaps(e, p.life))
        throw ImportError(p.line, "the life of " + p.life.box + " overlaps a life the lab already holds (box id " +
                                      std::to_string(e.boxId) + ", provisioned " + isoUtc(e.provisioned) + ")");
  auto& db = lab.db();
  store::Transaction tx(db);
  std::map<std::string, std::int64_t> venues;
  for (const auto& p : lives) {
    const BoxLife& l = p.life;
    if (!venues.count(l.provider)) {
      auto find = db.prepare("SELECT id FROM venues WHERE name = ? OR provider = ? ORDER BY name <> ?, id LIMIT 1");
      find.bind(1, l.provider).bind(2, l.provider).bind(3, l.provider);
      if (find.step()) {
        venues[l.provider] = find.int64(0);
      } else {
        auto ins = db.prepare("INSERT INTO venues(name, kind, provider, availability) VALUES (?, 'cloud', ?, 'unknown')");
        ins.bind(1, l.provider).bind(2, l.provider).run();
        venues[l.provider] = db.lastInsertId();
      }
    }
    auto box = db.prepare(
        "INSERT INTO boxes(venue_id, name, gpu_model, gpu_count, price_per_hour, min_minutes, state, provisioned_at, "
        "deleted_at) VALUES (?,?,?,?,?,?,?,?,?)");
    box.bind(1, venues[l.provider]).bind(2, l.box).bind(3, l.gpu).bind(4, l.gpus).bind(5, l.pricePerHour);
    box.bind(6, l.minMinutes).bind(7, l.alive() ? "running" : "deleted").bind(8, isoUtc(l.provisioned));
    if (l.deleted) box.bind(9, isoUtc(*l.deleted)); else box.bindNull(9);
    box.run();
    const auto boxId = db.lastInsertId();
    writeLifeEvent(db, boxId, LifeEvent::Provisioned, l.provisioned, "imported (line " + std::to_string(p.line) + ")");
    for (const auto& w : l.work) {
      auto st = db.prepare(
          "INSERT INTO box_work(box_id, kind, name, started_at, ended_at, status) VALUES (?,?,?,?,?,?)");
      st.bind(1, boxId).bind(2, std::string(toString(w.kind))).bind(3, w.name).bind(4, isoUtc(w.start));
      if (w.end) st.bind(5, isoUtc(*w.end)); else st.bindNull(5);
      st.bind(6, std::string(toString(w.status))).run();
    }
    for (const auto& t : l.transfers) {
      auto st = db.prepare(
          "INSERT INTO box_transfers(box_id, direction, what, bytes, started_at, ended_at) VALUES (?,?,?,?,?,?)");
      st.bind(1, boxId).bind(2, std::string(toString(t.direction))).bind(3, t.what).bind(4, t.bytes);
      st.bind(5, isoUtc(t.start)).bind(6, isoUtc(t.end)).run();
    }
    if (l.deleted) writeLifeEvent(db, boxId, LifeEvent::Deleted, *l.deleted, "imported");
  }
  tx.commit();
  return lives.size();
}

std::string exportLivesJsonl(const std::vector<BoxLife>& lives, const report::Redactor* redactor) {
  std::string out;
  for (const auto& l : lives) {
    nlohmann::ordered_json j;
    j["box"] = boxOf(redactor, l.box);
    j["provider"] = l.provider.empty() ? l.venue : l.provider;
    j["gpu"] = l.gpu;
    j["gpus"] = l.gpus;
    j["price_per_hour"] = l.pricePerHour;
    j["min_minutes"] = l.minMinutes;
    j["provisioned_at"] = isoUtc(l.provisioned);
    j["deleted_at"] = l.deleted ? nlohmann::ordered_json(isoUtc(*l.deleted)) : nlohmann::ordered_json(nullptr);
    auto work = nlohmann::ordered_json::array();
    for (const auto& w : l.work) {
      nlohmann::ordered_json o;
      o["kind"] = toString(w.kind);
      o["name"] = textOf(redactor, w.name);
      o["start"] = isoUtc(w.start);
      o["end"] = w.end ? nlohmann::ordered_json(isoUtc(*w.end)) : nlohmann::ordered_json(nullptr);
      o["status"] = toString(w.status);
      work.push_back(std::move(o));
    }
    j["work"] = std::move(work);
    auto transfers = nlohmann::ordered_json::array();
    for (const auto& t : l.transfers) {
      nlohmann::ordered_json o;
      o["direction"] = toString(t.direction);
      o["what"] = textOf(redactor, t.what);
      o["bytes"] = t.bytes;
      o["start"] = isoUtc(t.start);
      o["end"] = isoUtc(t.end);
      transfers.push_back(std::move(o));
    }
    j["transfers"] = std::move(transfers);
    out += j.dump() + "\n";
  }
  return out;
}

}  // namespace crosslab::ledger
