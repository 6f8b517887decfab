// libFuzzer: model outputs (JSON Lines {id, model, output}) and what the instruments read
// from each output: the format check (one JSON object with answer and evidence) and the
// quote check of every evidence string against fixed contexts.
#include "core/eval/eval_data.h"
#include "core/eval/output_check.h"
#include "fuzz/fuzz_support.h"

namespace {

const std::vector<std::string> kContexts = {
    "The Danube flows through ten countries, more than any other river in the world.",
    "Café au lait: coffee with hot milk. Ünïcödé text — with dashes — and 数字 42."};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  try {
    const auto outputs = eval::parseOutputs(fuzz::text(data, size), "outputs.jsonl");
    (void)eval::modelsOf(outputs);
    eval::QuoteChecker checker(kContexts);
    for (size_t i = 0; i < outputs.size() && i < 16; ++i) {
      const auto s = eval::checkSample(outputs[i], checker);
      if (!s.format.parsed()) fuzz::oneLine(s.format.error.c_str());
      for (const auto& q : s.quotes) {
        if (q.match.context < 0) continue;
        fuzz::require(size_t(q.match.context) < kContexts.size(), "match in a context that does not exist");
        fuzz::require(q.match.byteBegin <= q.match.byteEnd && q.match.byteEnd <= kContexts[size_t(q.match.context)].size(),
                      "span outside the context");
      }
    }
  } catch (const eval::EvalError& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
