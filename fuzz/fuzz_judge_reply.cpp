// libFuzzer: a judge model's reply (hosted or local, any text at all) read as a gate verdict
// and as a pairwise verdict. Never throws; a reply that does not fit says why.
#include "core/eval/rubric.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string reply = fuzz::text(data, size);
  for (const std::vector<int>& checks : {std::vector<int>{2, 3, 4}, std::vector<int>{}}) {
    std::string error;
    const auto r = eval::parseJudgeReply(reply, checks, &error);
    if (!r) fuzz::require(!error.empty(), "a judge reply refused without a reason");
    else
      for (int c : checks) fuzz::require(r->checks.count(c) == 1, "a gate check missing from an accepted reply");
  }
  std::string error;
  if (!eval::parsePairwiseReply(reply, &error)) fuzz::require(!error.empty(), "a pairwise reply refused without a reason");
  return 0;
}
