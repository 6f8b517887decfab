#pragma once
// "Four instruments, four verdicts", generated: per model, each instrument's acceptance
// rate side by side (format, quotes, each gate and judge, human; a "not measured" verdict
// counts in no rate); with a fresh check of the outputs, the mechanical breakdown (format
// strict / fenced / invalid, quotes exact / fuzzy / fabricated, fidelity); for every two
// instruments, raw agreement and Cohen's kappa over the samples both judged (labels:
// accept vs not accept; an abstention is not an accept); and calibration: a gate's rate on
// archived outputs next to their published score.
// A "not_measured" verdict (no judge answered) counts in no rate and no agreement: a rate
// with nothing measured is "not measured", never 0%.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/eval/agreement.h"
#include "core/eval/eval_store.h"
#include "core/eval/output_check.h"

namespace crosslab::eval {

struct Rate {
  size_t accepted = 0, total = 0;  // total: samples the instrument measured
  size_t notMeasured = 0;          // samples whose verdict is not_measured
  bool measured() const { return total > 0; }
  double value() const { return total ? static_cast<double>(accepted) / static_cast<double>(total) : 0.0; }
};

// "33% (10/30)", "not measured" (verdicts, none measured), "" (no verdict at all).
std::string rateCell(const Rate& rate);

struct InstrumentPair {
  std::string a, b;
  AgreementResult result;
};

struct CalibrationRow {
  std::string model, instrument;
  double published = 0;
  Rate measured;
};

struct InstrumentTable {
  std::vector<std::string> models, instruments;  // instruments: format, quotes, gate:*, judge:*, human, others
  std::map<std::string, std::map<std::string, Rate>> rates;  // model -> instrument -> rate
  std::map<std::string, ModelSummary> mechanical;  // model -> breakdown; empty unless the outputs were checked
  std::vector<InstrumentPair> pairs;
  std::vector<CalibrationRow> calibration;
};

// sample id -> instrument -> current verdict
using SampleLabels = std::map<std::int64_t, std::map<std::string, std::string>>;

// The table over `samples` (id, model; models in first-seen order) from their labels.
InstrumentTable tabulateInstruments(const std::vector<std::pair<std::int64_t, std::string>>& samples,
                                    const SampleLabels& labels, const std::map<std::string, double>& published);

// Over every sample in the lab, or those of one eval set, from the stored verdicts.
InstrumentTable buildInstrumentTable(EvalStore& store, const std::string& evalSha256 = {});

// From a fresh check of the samples (report.samples parallel to sampleIds): format and
// quotes come from the check (whether or not the lab stored them), with the breakdown;
// every other instrument from `stored`.
InstrumentTable checkedInstrumentTable(const CheckReport& report, const std::vector<std::int64_t>& sampleIds,
                                       const SampleLabels& stored, const std::map<std::string, double>& published);
nlohmann::json instrumentTableJson(const InstrumentTable& table);
std::string instrumentTableText(const InstrumentTable& table);

}  // namespace crosslab::eval
