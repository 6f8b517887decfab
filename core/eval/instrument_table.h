#pragma once
// "Four instruments, four verdicts", generated: per model, each instrument's acceptance
// rate side by side; for every two instruments, raw agreement and Cohen's kappa over the
// samples both judged (labels: accept vs not accept; an abstention is not an accept);
// and calibration: a gate's rate on archived outputs next to their published score.
// A "not_measured" verdict (no judge answered) counts in no rate and no agreement: a rate
// with nothing measured is "not measured", never 0%.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/eval/agreement.h"
#include "core/eval/eval_store.h"

namespace crosslab::eval {

struct Rate {
  size_t accepted = 0, total = 0;  // total: samples the instrument measured
  size_t notMeasured = 0;          // samples whose verdict is not_measured
  bool measured() const { return total > 0; }
  double value() const { return total ? static_cast<double>(accepted) / static_cast<double>(total) : 0.0; }
};

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
  std::vector<std::string> models, instruments;
  std::map<std::string, std::map<std::string, Rate>> rates;  // model -> instrument -> rate
  std::vector<InstrumentPair> pairs;
  std::vector<CalibrationRow> calibration;
};

// Over every sample in the lab, or those of one eval set.
InstrumentTable buildInstrumentTable(EvalStore& store, const std::string& evalSha256 = {});
nlohmann::json instrumentTableJson(const InstrumentTable& table);
std::string instrumentTableText(const InstrumentTable& table);

}  // namespace crosslab::eval
