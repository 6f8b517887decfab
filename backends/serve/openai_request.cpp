#include "backends/serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <random>

#include "backends/serve/api_error.h"

namespace crosslab::serve {
namespace {

using nlohmann::json;

std::string errorBodyImpl(int status, const std::string& type, const std::string& message, const std::string& param) {
  json e = {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", status}};
  return json{{"error", e}}.dump();
}

// A present, non-null field.
const json* field(const json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

bool boolField(const json& body, const char* key, bool fallback) {
  const json* v = field(body, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw ApiError::badRequest(std::string("'") + key + "' must be a boolean", key);
  return v->get<bool>();
}

double numberField(const json& body, const char* key, double fallback, double min, double max) {
  const json* v = field(body, key);
  if (!v) return fallback;
  if (!v->is_number()) throw ApiError::badRequest(std::string("'") + key + "' must be a number", key);
  const double x = v->get<double>();
  if (!(x >= min && x <= max))
    throw ApiError::badRequest(std::string("'") + key + "' must be in [" + json(min).dump() + ", " + json(max).dump() + "]", key);
  return x;
}

std::optional<int64_t> intField(const json& body, const char* key, int64_t min, int64_t max) {
  const json* v = field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw ApiError::badRequest(std::string("'") + key + "' must be an integer", key);
  // Unsigned values above int64 range arrive as number_unsigned: compare before converting.
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw ApiError::badRequest(std::string("'") + key + "' is out of range", key);
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max)
    throw ApiError::badRequest(std::string("'") + key + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]", key);
  return x;
}

std::vector<int32_t> idList(const json& v, const char* key) {
  if (!v.is_array()) throw ApiError::badRequest(std::string("'") + key + "' must be a list of token ids", key);
  std::vector<int32_t> ids;
  for (const auto& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw ApiError::badRequest(std::string("'") + key + "' must be a list of non-negative token ids", key);
    ids.push_back(x.get<int32_t>());
  }
  return ids;
}

void parsePrompt(const json& body, OpenAiRequest& r) {
  const json* p = field(body, "prompt");
  if (!p) throw ApiError::badRequest("'prompt' is required", "prompt");
  if (p->is_string()) {
    r.promptText = p->get<std::string>();
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    r.promptText = (*p)[0].get<std::string>();
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    r.promptIds = idList(*p, "prompt");
  } else if (p->is_array() && p->size() > 1) {
    throw ApiError::badRequest("only one prompt per request is supported", "prompt");
  } else {
    throw ApiError::badRequest("'prompt' must be a string or a list of token ids", "prompt");
  }
  if (r.promptText.empty() && !r.promptIds) throw ApiError::badRequest("'prompt' is empty", "prompt");
}

// content: a string, or a list of {type: "text", text} parts (OpenAI's multi-part form).
std::string messageContent(const json& m) {
  const auto it = m.find("content");
  if (it == m.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) throw ApiError::badRequest("message 'content' must be a string or a list of text parts", "messages");
  std::string text;
  for (const auto& part : *it) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      throw ApiError::badRequest("only text content parts are supported", "messages");
    text += part["text"].get<std::string>();
  }
  return text;
}

void parseMessages(const json& body, OpenAiRequest& r) {
  const json* m = field(body, "messages");
  if (!m || !m->is_array() || m->empty()) throw ApiError::badRequest("'messages' must be a non-empty list", "messages");
  for (const auto& msg : *m) {
    if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string())
      throw ApiError::badRequest("each message needs a string 'role'", "messages");
    const std::string role = msg["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant")
      throw ApiError::badRequest("unsupported message role '" + role + "'", "messages");
    r.messages.push_back({role, messageContent(msg)});
  }
}

void parseStops(const json& body, infer::ServeRequest& g) {
  if (const json* s = field(body, "stop")) {
    if (s->is_string()) {
      g.stopStrings.push_back(s->get<std::string>());
    } else if (s->is_array()) {
      for (const auto& x : *s) {
        if (!x.is_string()) throw ApiError::badRequest("'stop' must be a string or a list of strings", "stop");
        g.stopStrings.push_back(x.get<std::string>());
      }
    } else {
      throw ApiError::badRequest("'stop' must be a string or a list of strings", "stop");
    }
  }
  if (const json* ids = field(body, "stop_token_ids")) g.stopIds = idList(*ids, "stop_token_ids");
}

void parseSampling(const json& body, OpenAiRequest& r) {
  auto& s = r.gen.sampling;
  s.temperature = numberField(body, "temperature", 1.0, 0.0, 100.0);
  s.topP = numberField(body, "top_p", 1.0, 0.0, 1.0);
  if (s.topP <= 0.0) throw ApiError::badRequest("'top_p' must be in (0, 1]", "top_p");
  const auto topK = intField(body, "top_k", -1, std::numeric_limits<int32_t>::max());
  s.topK = topK && *topK > 0 ? int(*topK) : 0;  // -1 and 0 mean off (vLLM: -1)
  if (const auto seed = intField(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    s.seed = uint64_t(*seed);
  else
    s.seed = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);  // unseeded: a fresh draw
}

}  // namespace

std::string errorBody(int status, const std::string& type, const std::string& message, const std::string& param) {
  return errorBodyImpl(status, type, message, param);
}

OpenAiRequest parseOpenAiRequest(const std::string& text, bool chat) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ApiError::badRequest(std::string("malformed JSON body: ") + e.what());
  }
  if (!body.is_object()) throw ApiError::badRequest("the request body must be a JSON object");
  OpenAiRequest r;
  r.chat = chat;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) throw ApiError::badRequest("'model' must be a string", "model");
    r.model = m->get<std::string>();
  }
  chat ? parseMessages(body, r) : parsePrompt(body, r);
  if (const auto n = intField(body, "n", 1, 1)) (void)n;  // one choice per request
  r.stream = boolField(body, "stream", false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw ApiError::badRequest("'stream_options' must be an object", "stream_options");
    r.includeUsage = boolField(*so, "include_usage", false);
  }
  const int64_t big = std::numeric_limits<int32_t>::max();
  auto maxTokens = intField(body, "max_tokens", 1, big);
  if (chat)
    if (const auto mct = intField(body, "max_completion_tokens", 1, big)) maxTokens = mct;
  if (maxTokens) r.maxTokens = int(*maxTokens);
  r.gen.minTokens = int(intField(body, "min_tokens", 0, big).value_or(0));
  if (r.maxTokens && r.gen.minTokens > *r.maxTokens)
    throw ApiError::badRequest("'min_tokens' must be <= max_tokens", "min_tokens");
  r.gen.ignoreEos = boolField(body, "ignore_eos", false);
  parseSampling(body, r);
  parseStops(body, r.gen);
  return r;
}

}  // namespace crosslab::serve
