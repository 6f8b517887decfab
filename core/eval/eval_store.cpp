#include "core/eval/eval_store.h"

#include <nlohmann/json.hpp>

namespace crosslab::eval {
namespace {

constexpr const char* kPublishedPrefix = "eval.published_score/";

StoredVerdict readVerdict(store::Statement& s) {
  StoredVerdict v;
  v.id = s.int64(0);
  v.sampleId = s.int64(1);
  v.instrument = s.text(2);
  v.verdict = s.text(3);
  v.score = s.optReal(4);
  v.detailJson = s.isNull(5) ? std::string() : s.text(5);
  v.at = s.text(6);
  return v;
}

}  // namespace

bool isPairInstrument(const std::string& name) { return name.rfind("pair:", 0) == 0 || name == "human:pair"; }

bool isPerSampleInstrument(const std::string& name) { return !isPairInstrument(name) && name != "human:comment"; }

std::vector<std::int64_t> EvalStore::importOutputs(const std::string& sha, const std::vector<OutputRecord>& outputs,
                                                   const std::string& source, const std::string& promptTemplate) {
  store::Transaction tx(lab_.db());
  auto ids = insertSamples(sha, outputs, source, promptTemplate);
  tx.commit();
  return ids;
}

std::vector<std::int64_t> EvalStore::insertSamples(const std::string& sha, const std::vector<OutputRecord>& outputs,
                                                   const std::string& source, const std::string& promptTemplate) {
  auto& db = lab_.db();
  auto find = db.prepare("SELECT id, output FROM samples WHERE eval_sha256 = ?1 AND question_id = ?2 AND model = ?3");
  auto insert = db.prepare(
      "INSERT INTO samples (eval_sha256, question_id, model, output, source, prompt_template, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  std::vector<std::int64_t> ids;
  const std::string now = store::utcNow();
  for (const auto& r : outputs) {
    find.reset();
    find.bind(1, sha).bind(2, r.id).bind(3, r.model);
    if (find.step()) {
      if (find.text(1) != r.output)
        throw EvalError("the lab already holds a different output for question \"" + r.id + "\", model \"" +
                        r.model + "\" (import archived outputs under their own model label)");
      ids.push_back(find.int64(0));
      continue;
    }
    insert.reset();
    insert.bind(1, sha).bind(2, r.id).bind(3, r.model).bind(4, r.output).bind(5, source);
    if (promptTemplate.empty()) insert.bindNull(6);
    else insert.bind(6, promptTemplate);
    insert.bind(7, now);
    insert.run();
    ids.push_back(db.lastInsertId());
  }
  return ids;
}

void EvalStore::setVerdict(std::int64_t sampleId, const std::string& instrument, const std::string& verdict,
                           std::optional<double> score, const std::string& detailJson) {
  store::Transaction tx(lab_.db());
  replaceVerdict(sampleId, instrument, verdict, score, detailJson);
  tx.commit();
}

void EvalStore::replaceVerdict(std::int64_t sampleId, const std::string& instrument, const std::string& verdict,
                               std::optional<double> score, const std::string& detailJson) {
  auto& db = lab_.db();
  db.prepare("DELETE FROM verdicts WHERE sample_id = ?1 AND instrument = ?2").bind(1, sampleId).bind(2, instrument).run();
  db.prepare("INSERT INTO verdicts (sample_id, instrument, verdict, score, detail_json, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, sampleId).bind(2, instrument).bind(3, verdict).bind(4, score).bind(5, detailJson).bind(6, store::utcNow())
      .run();
}

std::int64_t EvalStore::addVerdict(std::int64_t sampleId, const std::string& instrument, const std::string& verdict,
                                   const std::string& detailJson) {
  auto& db = lab_.db();
  db.prepare("INSERT INTO verdicts (sample_id, instrument, verdict, detail_json, at) VALUES (?1, ?2, ?3, ?4, ?5)")
      .bind(1, sampleId).bind(2, instrument).bind(3, verdict).bind(4, detailJson).bind(5, store::utcNow())
      .run();
  return db.lastInsertId();
}

std::optional<StoredVerdict> EvalStore::undoLast(const std::string& prefix) {
  auto& db = lab_.db();
  store::Transaction tx(db);
  auto s = db.prepare(
      "SELECT id, sample_id, instrument, verdict, score, detail_json, at FROM verdicts "
      "WHERE substr(instrument, 1, length(?1)) = ?1 ORDER BY id DESC LIMIT 1");
  s.bind(1, prefix);
  if (!s.step()) return std::nullopt;
  StoredVerdict v = readVerdict(s);
  db.prepare("DELETE FROM verdicts WHERE id = ?1").bind(1, v.id).run();
  tx.commit();
  return v;
}

bool EvalStore::deleteVerdict(std::int64_t verdictId) {
  auto& db = lab_.db();
  db.prepare("DELETE FROM verdicts WHERE id = ?1").bind(1, verdictId).run();
  return db.scalarInt("SELECT changes()") > 0;
}

std::string EvalStore::changeStamp() {
  return lab_.db().scalarText(
      "SELECT (SELECT count(*) || ':' || coalesce(max(id), 0) FROM samples) || '/' || "
      "(SELECT count(*) || ':' || coalesce(max(id), 0) FROM verdicts)");
}

std::vector<StoredSample> EvalStore::samples(const std::string& sha) {
  auto s = lab_.db().prepare(
      "SELECT id, eval_sha256, question_id, model, output, coalesce(source, '') FROM samples "
      "WHERE ?1 = '' OR eval_sha256 = ?1 ORDER BY id");
  s.bind(1, sha);
  std::vector<StoredSample> out;
  while (s.step()) out.push_back({s.int64(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5)});
  return out;
}

std::vector<std::pair<std::int64_t, std::string>> EvalStore::sampleModels(const std::string& sha) {
  auto s = lab_.db().prepare("SELECT id, model FROM samples WHERE ?1 = '' OR eval_sha256 = ?1 ORDER BY id");
  s.bind(1, sha);
  std::vector<std::pair<std::int64_t, std::string>> out;
  while (s.step()) out.emplace_back(s.int64(0), s.text(1));
  return out;
}

std::map<std::int64_t, std::map<std::string, std::string>> EvalStore::currentLabels() {
  auto s = lab_.db().prepare("SELECT sample_id, instrument, verdict FROM verdicts ORDER BY id");
  std::map<std::int64_t, std::map<std::string, std::string>> out;
  while (s.step()) out[s.int64(0)][s.text(1)] = s.text(2);  // later rows overwrite earlier ones
  return out;
}

void EvalStore::outputsFor(const EvalSet& set, std::vector<OutputRecord>& records, std::vector<std::int64_t>& ids) {
  for (const auto& s : samples(set.sha256)) {
    if (!set.find(s.questionId)) continue;  // cannot happen for a matching SHA-256; be safe
    records.push_back({s.questionId, s.model, s.output});
    ids.push_back(s.id);
  }
}

std::vector<std::string> EvalStore::evalSets() {
  auto s = lab_.db().prepare("SELECT DISTINCT eval_sha256 FROM samples ORDER BY eval_sha256");
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::map<std::int64_t, std::map<std::string, StoredVerdict>> EvalStore::currentVerdicts() {
  auto s = lab_.db().prepare("SELECT id, sample_id, instrument, verdict, score, detail_json, at FROM verdicts ORDER BY id");
  std::map<std::int64_t, std::map<std::string, StoredVerdict>> out;
  while (s.step()) {
    StoredVerdict v = readVerdict(s);
    out[v.sampleId][v.instrument] = v;  // later rows overwrite earlier ones
  }
  return out;
}

std::map<std::pair<std::int64_t, std::int64_t>, StoredVerdict> EvalStore::currentPairVerdicts(const std::string& instrument) {
  auto s = lab_.db().prepare(
      "SELECT id, sample_id, instrument, verdict, score, detail_json, at FROM verdicts WHERE instrument = ?1 ORDER BY id");
  s.bind(1, instrument);
  std::map<std::pair<std::int64_t, std::int64_t>, StoredVerdict> out;
  while (s.step()) {
    StoredVerdict v = readVerdict(s);
    const auto detail = nlohmann::json::parse(v.detailJson, nullptr, false);
    if (!detail.is_object() || !detail.contains("other") || !detail["other"].is_number_integer()) continue;
    out[{v.sampleId, detail["other"].get<std::int64_t>()}] = v;  // later rows overwrite earlier ones
  }
  return out;
}

std::string EvalStore::setting(const std::string& key) { return lab_.setting(key); }

void EvalStore::setSetting(const std::string& key, const std::string& value) { lab_.setSetting(key, value); }

void EvalStore::setPublishedScore(const std::string& model, double score) {
  setSetting(kPublishedPrefix + model, std::to_string(score));
}

std::map<std::string, double> EvalStore::publishedScores() {
  auto s = lab_.db().prepare("SELECT key, value FROM settings WHERE substr(key, 1, length(?1)) = ?1");
  s.bind(1, std::string(kPublishedPrefix));
  std::map<std::string, double> out;
  const size_t prefix = std::string(kPublishedPrefix).size();
  while (s.step()) out[s.text(0).substr(prefix)] = std::stod(s.text(1));
  return out;
}

}  // namespace crosslab::eval

#include <nlohmann/json.hpp>

#include "core/eval/output_check.h"

namespace crosslab::eval {

void recordCheck(EvalStore& store, const CheckReport& report, const std::string& source) {
  std::vector<OutputRecord> records;
  for (const auto& s : report.samples) records.push_back(*s.record);
  store::Transaction tx(store.lab().db());  // one commit (one fsync) for everything, not two per sample
  const auto ids = store.insertSamples(report.evalSha256, records, source, {});
  for (size_t i = 0; i < ids.size(); ++i) {
    const SampleCheck& s = report.samples[i];
    nlohmann::json format = {{"kind", formatKindName(s.format.kind)}};
    if (!s.format.parsed()) format["error"] = s.format.error;
    store.replaceVerdict(ids[i], "format", s.formatAccepted() ? "accept" : "reject", std::nullopt, format.dump());
    const size_t found = s.count(QuoteKind::Exact) + s.count(QuoteKind::Fuzzy);
    std::optional<double> score;
    if (!s.quotes.empty()) score = static_cast<double>(found) / static_cast<double>(s.quotes.size());
    store.replaceVerdict(ids[i], "quotes", s.quotesAccepted() ? "accept" : "reject", score, sampleJson(s)["quotes"].dump());
  }
  tx.commit();
}

}  // namespace crosslab::eval
