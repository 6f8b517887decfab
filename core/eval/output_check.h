#pragma once
// `eval check`: format + quote fidelity for every output of an outputs file, summed per
// model. Outputs are grouped by question so each question's contexts are normalised once.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/eval/eval_data.h"
#include "core/eval/format_checker.h"
#include "core/eval/quote_checker.h"

namespace crosslab::eval {

struct QuoteResult {
  std::string quote;
  QuoteMatch match;
};

struct SampleCheck {
  const OutputRecord* record = nullptr;
  FormatResult format;
  std::vector<QuoteResult> quotes;

  // Per-sample instrument verdicts: format = parsed (strict or fenced); quotes = parsed,
  // at least one quote, and none fabricated or invalid.
  bool formatAccepted() const { return format.parsed(); }
  bool quotesAccepted() const;
  size_t count(QuoteKind kind) const;
};

struct ModelSummary {
  size_t samples = 0, jsonValid = 0, jsonFenced = 0;
  size_t quotes = 0, exact = 0, fuzzy = 0, fabricated = 0, invalid = 0;

  // Share of non-empty quotes found in context (exact + fuzzy), 0..1; 0 when no quotes.
  double fidelity() const;
  // "99% of quotes in context (1 fabricated of 89)"
  std::string fidelityLine() const;
};

struct CheckReport {
  std::string evalSha256;
  std::vector<std::string> models;  // first-seen order
  std::map<std::string, ModelSummary> summary;
  std::vector<SampleCheck> samples;  // same order as the outputs
};

// Throws EvalError when an output names a question the eval set lacks.
CheckReport checkOutputs(const EvalSet& eval, const std::vector<OutputRecord>& outputs);
SampleCheck checkSample(const OutputRecord& record, QuoteChecker& checker);

// {"eval_sha256", "models": {...}} plus "samples" (with spans) when detail is set.
nlohmann::json reportJson(const CheckReport& report, bool detail);
nlohmann::json sampleJson(const SampleCheck& sample);

}  // namespace crosslab::eval
