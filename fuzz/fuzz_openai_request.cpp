// libFuzzer: a request body sent to our OpenAI-compatible server, as /v1/completions and as
// /v1/chat/completions. Bad input is an ApiError with a 4xx status whose JSON error body is
// valid JSON; accepted input has a prompt and consistent token limits.
#include <nlohmann/json.hpp>

#include "backends/serve/api_error.h"
#include "backends/serve/openai_request.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  const std::string body = fuzz::text(data, size);
  for (bool chat : {false, true}) {
    try {
      const auto r = serve::parseOpenAiRequest(body, chat);
      if (chat) fuzz::require(!r.messages.empty(), "chat request without messages");
      else fuzz::require(!r.promptText.empty() || (r.promptIds && !r.promptIds->empty()), "completion without a prompt");
      if (r.maxTokens) fuzz::require(*r.maxTokens >= 1 && r.gen.minTokens <= *r.maxTokens, "inconsistent token limits");
    } catch (const serve::ApiError& e) {
      fuzz::require(e.status() >= 400 && e.status() < 500, "a request error that is not 4xx");
      const auto j = nlohmann::json::parse(serve::errorBody(e.status(), e.type(), e.what(), e.param()), nullptr, false);
      fuzz::require(j.is_object() && j.contains("error"), "the error body is not JSON");
    }
  }
  return 0;
}
