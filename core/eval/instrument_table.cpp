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

// format, quotes, gates, judges, human, then anything else: the order of the seed lab's
// "four instruments" (mechanical first, then judges, then the human reading).
int rank(const std::string& name) {
  if (name == "format") return 0;
  if (name == "quotes") return 1;
  if (name.rfind("gate:", 0) == 0) return 2;
  if (name.rfind("judge:", 0) == 0) return 3;
  if (name == "human") return 4;
  return 5;
}

std::string label(const std::string& verdict) { return parseVerdict(verdict) == Verdict::Accept ? "accept" : "not"; }

}  // namespace

std::string rateCell(const Rate& r) {
  if (r.total == 0) return r.notMeasured ? "not measured" : "";
  return percent(r.value()) + " (" + std::to_string(r.accepted) + "/" + std::to_string(r.total) + ")";
}

InstrumentTable tabulateInstruments(const std::vector<std::pair<std::int64_t, std::string>>& samples,
                                    const SampleLabels& verdicts, const std::map<std::string, double>& published) {
  InstrumentTable t;
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
  std::stable_sort(t.instruments.begin(), t.instruments.end(),
                   [](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  for (size_t i = 0; i < t.instruments.size(); ++i)
    for (size_t j = i + 1; j < t.instruments.size(); ++j) {
      std::vector<std::string> a, b;
      for (const auto& sample : samples) {
        auto it = verdicts.find(sample.first);
        if (it == verdicts.end()) continue;
        auto va = it->second.find(t.instruments[i]), vb = it->second.find(t.instruments[j]);
        if (va == it->second.end() || vb == it->second.end() || !isMeasured(va->second) || !isMeasured(vb->second))
          continue;
        a.push_back(label(va->second));
        b.push_back(label(vb->second));
      }
      if (!a.empty()) t.pairs.push_back({t.instruments[i], t.instruments[j], Agreement::compute(a, b)});
    }
  for (const auto& [model, score] : published)
    for (const auto& name : t.instruments)
      if (name.rfind("gate:", 0) == 0 && t.rates[model].count(name) && t.rates[model][name].measured())
        t.calibration.push_back({model, name, score, t.rates[model][name]});
  return t;
}

InstrumentTable buildInstrumentTable(EvalStore& store, const std::string& sha) {
  return tabulateInstruments(store.sampleModels(sha), store.currentLabels(), store.publishedScores());
}

InstrumentTable checkedInstrumentTable(const CheckReport& report, const std::vector<std::int64_t>& sampleIds,
                                       const SampleLabels& stored, const std::map<std::string, double>& published) {
  std::vector<std::pair<std::int64_t, std::string>> samples;
  SampleLabels labels;
  for (size_t i = 0; i < report.samples.size() && i < sampleIds.size(); ++i) {
    const SampleCheck& s = report.samples[i];
    const std::int64_t id = sampleIds[i];
    samples.emplace_back(id, s.record->model);
    if (auto it = stored.find(id); it != stored.end()) labels[id] = it->second;
    labels[id]["format"] = s.formatAccepted() ? "accept" : "reject";
    labels[id]["quotes"] = s.quotesAccepted() ? "accept" : "reject";
  }
  InstrumentTable t = tabulateInstruments(samples, labels, published);
  if (!report.models.empty()) t.models = report.models;
  t.mechanical = report.summary;
  return t;
}

nlohmann::json instrumentTableJson(const InstrumentTable& t) {
  nlohmann::json models = nlohmann::json::object();
  for (const auto& m : t.models) {
    nlohmann::json row = nlohmann::json::object();
    auto it = t.rates.find(m);
    if (it != t.rates.end())
      for (const auto& [name, r] : it->second)
        row[name] = {{"accepted", r.accepted}, {"total", r.total}, {"not_measured", r.notMeasured},
                     {"rate", r.measured() ? nlohmann::json(r.value()) : nlohmann::json()}};
    if (auto mech = t.mechanical.find(m); mech != t.mechanical.end()) {
      const ModelSummary& x = mech->second;
      row["breakdown"] = {{"samples", x.samples}, {"json_strict", x.jsonValid}, {"json_fenced", x.jsonFenced},
                          {"json_invalid", x.samples - x.jsonValid - x.jsonFenced}, {"quotes", x.quotes},
                          {"exact", x.exact}, {"fuzzy", x.fuzzy}, {"fabricated", x.fabricated}, {"fidelity", x.fidelity()}};
    }
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
      const std::string cell = rateCell(r);
      os << std::setw(22) << (cell.empty() ? "-" : cell);
    }
    os << "\n";
  }
  if (!t.mechanical.empty()) {
    os << "\n" << std::setw(24) << "model" << "format strict/fenced/invalid   quotes exact/fuzzy/fabricated   fidelity\n";
    for (const auto& m : t.models) {
      auto it = t.mechanical.find(m);
      if (it == t.mechanical.end()) continue;
      const ModelSummary& x = it->second;
      const std::string format = std::to_string(x.jsonValid) + " / " + std::to_string(x.jsonFenced) + " / " +
                                 std::to_string(x.samples - x.jsonValid - x.jsonFenced);
      const std::string quotes = std::to_string(x.exact) + " / " + std::to_string(x.fuzzy) + " / " + std::to_string(x.fabricated);
      os << std::setw(24) << m << std::setw(31) << format << std::setw(31) << quotes << x.fidelityLine() << "\n";
    }
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
