#include "backends/serve/sse_stream.h"

#include "backends/serve/api_error.h"

namespace crosslab::serve::sse {

json usageJson(const infer::ServeResult& r) {
  const int completion = int(r.ids.size());
  return {{"prompt_tokens", r.promptTokens}, {"completion_tokens", completion}, {"total_tokens", r.promptTokens + completion}};
}

json stopReasonJson(const infer::ServeResult& r) {
  if (r.stopReason.empty()) return nullptr;
  const bool numeric = r.stopReason.find_first_not_of("0123456789") == std::string::npos;
  return numeric ? json(std::stoll(r.stopReason)) : json(r.stopReason);
}

json chunk(const Meta& m, json choice) {
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({std::move(choice)})}};
}

json textChoice(const Meta& m, const std::string& text, const json& finish, const json& stopReason) {
  if (m.chat) {
    json delta = text.empty() && !finish.is_null() ? json::object() : json{{"content", text}};
    return {{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}, {"stop_reason", stopReason}};
  }
  return {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish}, {"stop_reason", stopReason}};
}

std::string dumpText(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string frame(const json& j) { return "data: " + dumpText(j) + "\n\n"; }

TokenFrames::TokenFrames(const Meta& m) {
  const std::string marker = "\x01crosslab-token\x01";
  const std::string whole = frame(chunk(m, textChoice(m, marker, nullptr, nullptr)));
  const std::string escaped = quoted(marker);
  const size_t at = whole.find(escaped);
  if (at == std::string::npos || whole.find(escaped, at + 1) != std::string::npos)
    throw std::logic_error("token frame: marker not found once");
  head_ = whole.substr(0, at);
  tail_ = whole.substr(at + escaped.size());
}

std::string SseStream::framesFor(std::deque<Event> events, bool* finished) {
  std::string out;
  if (meta.chat && !roleSent) {  // vLLM: the first chat delta carries the role
    out += frame(chunk(meta, {{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                              {"finish_reason", nullptr}}));
    roleSent = true;
  }
  for (auto& e : events) {
    if (!e.done) {
      frames.append(out, e.text);
      continue;
    }
    const infer::ServeResult& r = e.result;
    if (r.finishReason == "error" || r.finishReason == "cancelled") {
      out += "data: " + errorBody(500, "InternalServerError", r.error.empty() ? "the request was cancelled" : r.error) + "\n\n";
    } else {
      if (!r.unsent.empty()) out += frame(chunk(meta, textChoice(meta, r.unsent, nullptr, nullptr)));
      out += frame(chunk(meta, textChoice(meta, "", r.finishReason, stopReasonJson(r))));
      if (includeUsage) {
        json u = {{"id", meta.id}, {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
                  {"created", meta.created}, {"model", meta.model}, {"choices", json::array()}, {"usage", usageJson(r)}};
        out += frame(u);
      }
    }
    out += "data: [DONE]\n\n";
    *finished = true;
    break;
  }
  return out;
}

}  // namespace crosslab::serve::sse
