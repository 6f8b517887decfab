#pragma once
// Parses and validates the JSON body of POST /v1/completions and /v1/chat/completions
// ("parse JSON at the edge, native types inside"). Every bad field is an ApiError 400
// naming the field; nothing here touches the engine. No field is ignored: one the server
// does not implement (logprobs, penalties, tools …) is accepted only at the value that asks
// for nothing and refused with 400 "not supported" otherwise; an unknown field is a 400.
// A body that is not UTF-8 is a 400 naming the field that holds the bad byte.

#include <optional>
#include <string>
#include <vector>

#include "core/infer/serve_request.h"
#include "core/tokenizer/chat_template.h"

namespace crosslab::serve {

struct OpenAiRequest {
  bool chat = false;
  std::string model;  // empty = the base model
  bool stream = false;
  bool includeUsage = false;  // stream_options.include_usage
  std::string promptText;                    // completions: a text prompt
  std::optional<std::vector<int32_t>> promptIds;  // completions: a token-id prompt
  std::vector<tokenizer::ChatMessage> messages;   // chat
  std::optional<int> maxTokens;  // absent = what the context leaves
  infer::ServeRequest gen;       // sampling, stops, min_tokens, ignore_eos (no prompt, no callbacks)
};

// Throws ApiError (400) for malformed JSON, wrong types and out-of-range values.
OpenAiRequest parseOpenAiRequest(const std::string& body, bool chat);

}  // namespace crosslab::serve
