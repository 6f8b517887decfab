#include "core/eval/output_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace crosslab::eval {

bool SampleCheck::quotesAccepted() const {
  if (!format.parsed() || quotes.empty()) return false;
  return count(QuoteKind::Fabricated) == 0 && count(QuoteKind::Invalid) == 0;
}

size_t SampleCheck::count(QuoteKind kind) const {
  return static_cast<size_t>(
      std::count_if(quotes.begin(), quotes.end(), [kind](const QuoteResult& q) { return q.match.kind == kind; }));
}

double ModelSummary::fidelity() const {
  return quotes == 0 ? 0.0 : static_cast<double>(exact + fuzzy) / static_cast<double>(quotes);
}

std::string ModelSummary::fidelityLine() const {
  const long pct = std::lround(100.0 * fidelity());
  return std::to_string(pct) + "% of quotes in context (" + std::to_string(fabricated) + " fabricated of " +
         std::to_string(quotes) + ")";
}

SampleCheck checkSample(const OutputRecord& record, QuoteChecker& checker) {
  SampleCheck s;
  s.record = &record;
  s.format = FormatChecker::check(record.output);
  for (const auto& q : s.format.evidence) s.quotes.push_back({q, checker.check(q)});
  return s;
}

CheckReport checkOutputs(const EvalSet& eval, const std::vector<OutputRecord>& outputs) {
  CheckReport report;
  report.evalSha256 = eval.sha256;
  report.models = modelsOf(outputs);
  std::vector<size_t> order(outputs.size());
  std::vector<size_t> questionOf(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto it = eval.indexById.find(outputs[i].id);
    if (it == eval.indexById.end())
      throw EvalError("output id \"" + outputs[i].id + "\" (model \"" + outputs[i].model + "\") is not in the eval set");
    questionOf[i] = it->second;
  }
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return questionOf[a] < questionOf[b]; });
  report.samples.resize(outputs.size());
  for (size_t k = 0; k < order.size();) {
    const size_t question = questionOf[order[k]];
    QuoteChecker checker(eval.questions[question].contexts);
    for (; k < order.size() && questionOf[order[k]] == question; ++k)
      report.samples[order[k]] = checkSample(outputs[order[k]], checker);
  }
  for (const auto& s : report.samples) {
    ModelSummary& m = report.summary[s.record->model];
    ++m.samples;
    m.jsonValid += s.format.kind == FormatKind::Strict;
    m.jsonFenced += s.format.kind == FormatKind::Fenced;
    m.invalid += s.count(QuoteKind::Invalid);
    m.quotes += s.quotes.size() - s.count(QuoteKind::Invalid);
    m.exact += s.count(QuoteKind::Exact);
    m.fuzzy += s.count(QuoteKind::Fuzzy);
    m.fabricated += s.count(QuoteKind::Fabricated);
  }
  return report;
}

nlohmann::json sampleJson(const SampleCheck& s) {
  nlohmann::json quotes = nlohmann::json::array();
  for (const auto& q : s.quotes) {
    nlohmann::json j = {{"quote", q.quote}, {"result", quoteKindName(q.match.kind)}, {"score", q.match.score},
                        {"normalized", normalizeStepNames(q.match.normalized)}};
    if (q.match.caseFolded) j["case_differs"] = true;
    if (q.match.context >= 0) {
      j["context"] = q.match.context;
      j["start"] = q.match.charBegin;
      j["end"] = q.match.charEnd;
      j["byte_start"] = q.match.byteBegin;
      j["byte_end"] = q.match.byteEnd;
    }
    quotes.push_back(std::move(j));
  }
  nlohmann::json j = {{"id", s.record->id}, {"model", s.record->model}, {"format", formatKindName(s.format.kind)},
                      {"quotes", std::move(quotes)}};
  if (!s.format.parsed()) j["format_error"] = s.format.error;
  return j;
}

nlohmann::json reportJson(const CheckReport& report, bool detail) {
  nlohmann::json models = nlohmann::json::object();
  for (const auto& name : report.models) {
    const ModelSummary& m = report.summary.at(name);
    models[name] = {{"samples", m.samples}, {"json_valid", m.jsonValid}, {"json_fenced", m.jsonFenced},
                    {"quotes", m.quotes},   {"exact", m.exact},          {"fuzzy", m.fuzzy},
                    {"fabricated", m.fabricated}, {"invalid", m.invalid}, {"fidelity", m.fidelity()}};
  }
  nlohmann::json j = {{"eval_sha256", report.evalSha256}, {"models", std::move(models)},
                      {"rules", {{"exact", QuoteChecker::kExactRule}, {"fuzzy", QuoteChecker::kFuzzyRule}}}};
  if (detail) {
    j["samples"] = nlohmann::json::array();
    for (const auto& s : report.samples) j["samples"].push_back(sampleJson(s));
  }
  return j;
}

}  // namespace crosslab::eval
