#pragma once
// Everything the Review panel shows for one eval set, loaded off the GUI thread: the eval
// set, the lab's samples for it, their format/quote checks (with matched spans), the
// current verdicts (pairwise human verdicts by the pair they judged) and the published
// scores for calibration. Built by loadReviewSnapshot() on a worker thread with its own
// lab connection; the GUI only reads it (and updates verdicts).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/eval/eval_store.h"
#include "core/eval/instrument_table.h"
#include "core/eval/output_check.h"

namespace crosslab::widgets {

struct ReviewSnapshot {
  eval::EvalSet evalSet;
  std::vector<eval::OutputRecord> records;  // one per sample of this eval set
  std::vector<std::int64_t> sampleIds;      // parallel to records
  eval::CheckReport report;                 // report.samples parallel to records (points into records)
  std::vector<std::string> models;
  std::map<std::pair<size_t, std::string>, size_t> byQuestionModel;  // (question index, model) -> record
  std::map<std::int64_t, std::map<std::string, eval::StoredVerdict>> verdicts;  // sample id -> instrument -> latest
  std::string stamp;  // EvalStore::changeStamp() before the samples were read
  // "human:pair" verdicts: (sample x, sample y) -> latest; verdict "x" | "y" | "tie".
  std::map<std::pair<std::int64_t, std::int64_t>, eval::StoredVerdict> pairVerdicts;
  std::map<std::string, double> published;  // model -> published score (calibration)

  // Record index of `model`'s output for question `question`, or -1.
  int find(size_t question, const std::string& model) const;
  // Every instrument per model: format and quotes from this snapshot's check, the rest
  // from the current verdicts.
  eval::InstrumentTable instrumentTable() const;
};

// Opens the lab at labDir (its own connection), optionally imports an outputs file first
// (with its format/quotes verdicts), then reads and checks every sample of the eval set.
// Throws std::exception with a one-line reason.
std::shared_ptr<ReviewSnapshot> loadReviewSnapshot(const std::string& labDir, const std::string& evalPath,
                                                   const std::string& importOutputs = {});

// The same from data already in memory (tests, benchmarks): no lab involved.
std::shared_ptr<ReviewSnapshot> makeReviewSnapshot(eval::EvalSet evalSet, std::vector<eval::OutputRecord> records,
                                                   std::vector<std::int64_t> sampleIds);

}  // namespace crosslab::widgets
