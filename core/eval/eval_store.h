#pragma once
// Samples and verdicts in the lab store. A sample is one model's output for one question of
// one frozen eval set (eval_sha256). Verdict rows are history: the current verdict of an
// instrument on a sample is its latest row. Machine instruments (format, quotes, gate:*,
// judge:*) replace their rows when re-run; human verdicts append, and undo deletes the
// latest one so the previous verdict shows again.
// Instrument names: "format", "quotes", "gate:<gate>", "judge:<gate>/<judge>", "human",
// "human:comment", and pairwise ones "pair:gate:<gate>", "human:pair" (stored on sample x
// with detail {"other": <sample id of y>}; verdict "x" | "y" | "tie" | "inconsistent" ...).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/eval_data.h"
#include "core/store/lab_store.h"

namespace crosslab::eval {

struct CheckReport;

// Pairwise instruments (verdict names a side) and comments give no per-sample accept/reject.
bool isPairInstrument(const std::string& name);
bool isPerSampleInstrument(const std::string& name);

struct StoredSample {
  std::int64_t id = 0;
  std::string evalSha256, questionId, model, output, source;
};

struct StoredVerdict {
  std::int64_t id = 0;
  std::int64_t sampleId = 0;
  std::string instrument, verdict, detailJson, at;
  std::optional<double> score;
};

class EvalStore {
 public:
  explicit EvalStore(store::LabStore& lab) : lab_(lab) {}

  // One transaction. A (question, model) already stored with a different output is an
  // error (nothing is written): archived outputs need their own model label.
  std::vector<std::int64_t> importOutputs(const std::string& evalSha256, const std::vector<OutputRecord>& outputs,
                                          const std::string& source, const std::string& promptTemplate = {});

  // Replaces the instrument's rows on the sample (machine instruments).
  void setVerdict(std::int64_t sampleId, const std::string& instrument, const std::string& verdict,
                  std::optional<double> score, const std::string& detailJson);
  // Appends (human verdicts); returns the new row id.
  std::int64_t addVerdict(std::int64_t sampleId, const std::string& instrument, const std::string& verdict,
                          const std::string& detailJson);
  // Deletes the latest row whose instrument starts with `prefix`; returns it, if any.
  std::optional<StoredVerdict> undoLast(const std::string& prefix);
  bool deleteVerdict(std::int64_t verdictId);

  std::vector<StoredSample> samples(const std::string& evalSha256 = {});
  // Changes whenever samples or verdicts are added, replaced or removed (count and newest
  // id of each): a view reloads when it differs from the one it read at.
  std::string changeStamp();
  // The stored outputs answering `set` (its questions only), with their sample ids.
  void outputsFor(const EvalSet& set, std::vector<OutputRecord>& records, std::vector<std::int64_t>& sampleIds);
  std::vector<std::string> evalSets();
  // (sample id, model) of an eval set's samples, without their outputs.
  std::vector<std::pair<std::int64_t, std::string>> sampleModels(const std::string& evalSha256 = {});
  // Latest verdict label per (sample, instrument), without details.
  std::map<std::int64_t, std::map<std::string, std::string>> currentLabels();
  // Latest verdict per (sample, instrument).
  std::map<std::int64_t, std::map<std::string, StoredVerdict>> currentVerdicts();
  // Latest verdict of a pairwise instrument per (sample x, sample y = detail's "other").
  std::map<std::pair<std::int64_t, std::int64_t>, StoredVerdict> currentPairVerdicts(const std::string& instrument);

  // Lab-scoped key/value settings (the settings table); "" when unset.
  std::string setting(const std::string& key);
  void setSetting(const std::string& key, const std::string& value);

  // Published scores of archived outputs (calibration), kept in the settings table.
  void setPublishedScore(const std::string& model, double score);
  std::map<std::string, double> publishedScores();

  store::LabStore& lab() { return lab_; }

 private:
  friend void recordCheck(EvalStore&, const CheckReport&, const std::string&);
  std::vector<std::int64_t> insertSamples(const std::string& evalSha256, const std::vector<OutputRecord>& outputs,
                                          const std::string& source, const std::string& promptTemplate);
  void replaceVerdict(std::int64_t sampleId, const std::string& instrument, const std::string& verdict,
                      std::optional<double> score, const std::string& detailJson);  // inside a transaction

  store::LabStore& lab_;
};

}  // namespace crosslab::eval

namespace crosslab::eval {
// Imports the report's outputs as samples and records their "format" and "quotes" verdicts
// (one transaction: all or nothing).
void recordCheck(EvalStore& store, const CheckReport& report, const std::string& source);
}  // namespace crosslab::eval
