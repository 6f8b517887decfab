#pragma once
// A blocking client for OpenAI-compatible /v1/chat/completions (our server, vLLM, hosted
// APIs, judges): one user message, temperature 0, per-request timeouts, and retries with
// exponential backoff on 429, 5xx and transport errors (Retry-After honoured, capped).
// The API key goes only into the Authorization header; it is never logged or returned.
// Built on cpp-httplib (Debian's build has TLS), so it runs on any thread.

#include "core/eval/judge_gate.h"

namespace crosslab::backends {

class OpenAiChatClient : public eval::ChatTransport {
 public:
  eval::ChatResult complete(const eval::ChatRequest& request) override;

  // "http://h:8000" and "http://h:8000/v1" -> "http://h:8000" + "/v1/chat/completions";
  // "https://h/v1beta/openai" -> "https://h" + "/v1beta/openai/chat/completions".
  static bool splitUrl(const std::string& url, std::string* origin, std::string* path);
};

}  // namespace crosslab::backends
