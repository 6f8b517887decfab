// libFuzzer: an eval set (JSON Lines {id, question, contexts[], reference?}). Accepted
// questions go through the quote checker with their own question as the quote: whatever it
// matches lies inside the context it names.
#include "core/eval/eval_data.h"
#include "core/eval/quote_checker.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  try {
    const auto set = eval::parseEvalSet(fuzz::text(data, size), "eval.jsonl");
    fuzz::require(set.indexById.size() == set.questions.size(), "ids not unique or not indexed");
    for (size_t i = 0; i < set.questions.size() && i < 8; ++i) {
      const auto& q = set.questions[i];
      fuzz::require(set.find(q.id) == &q, "find() does not return the question");
      eval::QuoteChecker checker(q.contexts);
      const auto m = checker.check(q.question);
      if (m.context >= 0) {
        fuzz::require(size_t(m.context) < q.contexts.size(), "match in a context that does not exist");
        fuzz::require(m.byteBegin <= m.byteEnd && m.byteEnd <= q.contexts[size_t(m.context)].size(), "span outside the context");
        fuzz::require(m.charBegin <= m.charEnd, "reversed span");
      }
    }
  } catch (const eval::EvalError& e) {
    fuzz::oneLine(e.what());
  }
  return 0;
}
