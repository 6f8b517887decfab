#include "core/eval/instrument_table.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "core/eval/verdict.h"

namespace crosslab::eval {
namespace {

std::string percent(double v) { return std::to_string(std::lround(100 * v)) + "%"; }

}  // namespace

InstrumentTable buildInstrumentTable(EvalStore& store, const std::string& sha) {
  InstrumentTable t;
  const auto samples = store.sampleModels(sha);
  const auto verdicts = store.currentLabels();
  std::set<std::string> instruments;
  for (const auto& [id, model] : samples) {
    if (std::find(t.models.begin(), t.models.end(), model) == t.models.end()) t.models.push_back(model);
    auto it = verdicts.find(id);
    if (it == verdicts.end()) continue;
    for (const auto& [name, verdict] : it->second) {
      if (!isPerSampleInstrument(name)) continue;
      instruments.insert(name);
      Rate& r = t.rates[model][name];
      if (!isMeasured(verdict)) {
        ++r.notMeasured;
        continue;
      }
      ++r.total;
      r.accepted += parseVerdict(verdict) == Verdict::Accept;
    }
  }
  t.instruments.assign(instruments.begin(), instruments.end());
  for (size_t i = 0; i < t.instruments.size(); ++i)
    for (size_t j = i + 1; j < t.instruments.size(); ++j) {
      std::vector<std::string> a, b;
      for (const auto& sample : samples) {
        auto it = verdicts.find(sample.first);
        if (it == verdicts.end()) continue;
        auto va = it->second.find(t.instruments[i]), vb = it->second.find(t.instruments[j]);
        if (va == it->second.end() || vb == it->second.end()) continue;
        if (!isMeasured(va->second) || !isMeasured(vb->second)) continue;
        a.push_back(va->second == "accept" ? "accept" : "not");
        b.push_back(vb->second == "accept" ? "accept" : "not");
      }
      if (!a.empty()) t.pairs.push_back({t.instruments[i], t.instruments[j], Agreement::compute(a, b)});
    }
  for (const auto& [model, published] : store.publishedScores())
    for (const auto& name : t.instruments)
      if (name.rfind("gate:", 0) == 0 && t.rates[model].count(name) && t.rates[model][name].measured())
        t.calibration.push_back({model, name, published, t.rates[model][name]});
  return t;
}

nlohmann::json instrumentTableJson(const InstrumentTable& t) {
  nlohmann::json models = nlohmann::json::object();
  for (const auto& m : t.models) {
    nlohmann::json row = nlohmann::json::object();
    auto it = t.rates.find(m);
    if (it != t.rates.end())
      for (const auto& [name, r] : it->second)
        row[name] = {{"accepted", r.accepted},
                     {"total", r.total},
                     {"not_measured", r.notMeasured},
                     {"rate", r.measured() ? nlohmann::json(r.value()) : nlohmann::json()}};
    models[m] = row;
  }
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& p : t.pairs)
    pairs.push_back({{"a", p.a}, {"b", p.b}, {"n", p.result.n}, {"raw", p.result.raw},
                     {"kappa", p.result.kappa ? nlohmann::json(*p.result.kappa) : nlohmann::json()}});
  nlohmann::json cal = nlohmann::json::array();
  for (const auto& c : t.calibration)
    cal.push_back({{"model", c.model}, {"instrument", c.instrument}, {"published", c.published},
                   {"measured", c.measured.value()}, {"shift", c.measured.value() - c.published}, {"n", c.measured.total}});
  nlohmann::json out = {{"instruments", t.instruments}, {"models", models}, {"agreement", pairs}, {"calibration", cal}};
  if (!t.calibration.empty()) out["calibration_warning"] = "absolute scores across instruments are not comparable";
  return out;
}

std::string instrumentTableText(const InstrumentTable& t) {
  std::ostringstream os;
  os << std::left << std::setw(24) << "model";
  for (const auto& i : t.instruments) os << std::setw(22) << i;
  os << "\n";
  for (const auto& m : t.models) {
    os << std::setw(24) << m;
    for (const auto& i : t.instruments) {
      auto it = t.rates.find(m);
      const Rate r = it != t.rates.end() && it->second.count(i) ? it->second.at(i) : Rate{};
      std::string cell = r.total ? percent(r.value()) + " (" + std::to_string(r.accepted) + "/" + std::to_string(r.total) + ")"
                         : r.notMeasured ? "not measured"
                                         : "-";
      os << std::setw(22) << cell;
    }
    os << "\n";
  }
  if (!t.pairs.empty()) os << "\nagreement (accept vs not):\n";
  for (const auto& p : t.pairs) {
    os << "  " << p.a << " vs " << p.b << ": n " << p.result.n << ", raw " << percent(p.result.raw) << ", kappa ";
    if (p.result.kappa) os << std::fixed << std::setprecision(2) << *p.result.kappa << std::defaultfloat;
    else os << "undefined";
    os << "\n";
  }
  if (!t.calibration.empty()) os << "\ncalibration (absolute scores across instruments are not comparable):\n";
  for (const auto& c : t.calibration)
    os << "  " << c.model << ": published " << percent(c.published) << " -> " << percent(c.measured.value()) << " under "
       << c.instrument << " (n " << c.measured.total << ")\n";
  return os.str();
}

}  // namespace crosslab::eval
