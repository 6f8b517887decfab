#pragma once
// One generation request as the batch scheduler sees it: token ids in, streamed text out.
// Parsed from HTTP/JSON at the edge (backends/serve); native types here.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/infer/sampler.h"

namespace crosslab::infer {

struct ServeResult {
  std::vector<int32_t> ids;  // completion only
  std::string text;
  int promptTokens = 0;
  std::string finishReason;  // stop | length | cancelled | error
  std::string stopReason;    // the stop string or id that ended it (vLLM's stop_reason); empty = EOS/none
  std::string error;         // set when finishReason == "error"
  std::string unsent;        // text held back while streaming (a possible stop string) and released at the end
};

struct ServeRequest {
  std::vector<int32_t> prompt;
  int maxTokens = 16;
  int minTokens = 0;  // EOS and stop ids are suppressed until this many tokens exist
  SamplingParams sampling;
  std::vector<int32_t> stopIds;          // in addition to the config's EOS ids
  std::vector<std::string> stopStrings;  // not part of the output
  bool ignoreEos = false;
  std::string adapter;  // runtime LoRA name; empty = base weights
  // Both run on the scheduler thread and must be quick (hand the data to another thread).
  // onToken gets every accepted token and the text it made safe to send; false = cancel.
  std::function<bool(int32_t id, const std::string& text)> onToken;
  std::function<void(const ServeResult&)> onDone;  // exactly once
};

}  // namespace crosslab::infer
