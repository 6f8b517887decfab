#include "backends/serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <random>

#include "backends/serve/api_error.h"
#include "core/tokenizer/utf8.h"

namespace crosslab::serve {
namespace {

using nlohmann::json;

std::string errorBodyImpl(int status, const std::string& type, const std::string& message, const std::string& param) {
  json e = {{"message", message}, {"type", type}, {"param", param.empty() ? json(nullptr) : json(param)}, {"code", status}};
  // A message may quote the client's bytes: replace what is not UTF-8, never throw here.
  return json{{"error", e}}.dump(-1, ' ', false, json::error_handler_t::replace);
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

// The top-level field whose value holds the first byte that is not UTF-8: a SAX pass stops
// at that string, and by then it has seen the field's key.
class TopFieldTracker : public json::json_sax_t {
 public:
  std::string field;     // the top-level key last read
  bool inValue = false;  // and its value has begun: a bad byte now belongs to it

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, scalar(); }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, scalar(); }
  bool key(string_t& k) override {
    if (depth_ == 1) field = k, inValue = true;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool scalar() {
    if (depth_ == 1) inValue = false;  // a top-level value ended (or a nested one closed)
    return true;
  }
  int depth_ = 0;
};

// vLLM answers a body it cannot decode with 400; so do we, naming the field when we can.
void rejectInvalidUtf8(const std::string& text) {
  const size_t bad = tokenizer::validUtf8Prefix(text);
  if (bad == text.size()) return;
  TopFieldTracker where;
  json::sax_parse(text, &where, json::input_format_t::json, false);
  const std::string at = "byte " + std::to_string(bad);
  if (where.inValue)
    throw ApiError::badRequest("'" + where.field + "' is not valid UTF-8 (" + at + " of the body)", where.field);
  throw ApiError::badRequest("the request body is not valid UTF-8 (" + at + ")");
}

// Every field a request may carry and what becomes of it. The server honours some; the
// others it does not implement are accepted only at the value that changes nothing (what
// the client gets anyway) and answered 400 "not supported" otherwise; a field the table
// does not know is a 400 too. Nothing is ignored silently.
enum Endpoint : unsigned { kCompletions = 1, kChat = 2, kBoth = 3 };

bool never(const json&) { return false; }
bool isFalse(const json& v) { return v.is_boolean() && !v.get<bool>(); }
bool isTrue(const json& v) { return v.is_boolean() && v.get<bool>(); }
bool isBool(const json& v) { return v.is_boolean(); }
bool isZero(const json& v) { return v.is_number() && v.get<double>() == 0.0; }
bool isOne(const json& v) { return v.is_number() && v.get<double>() == 1.0; }
bool isEmpty(const json& v) {
  return v.is_string() ? v.get_ref<const std::string&>().empty() : (v.is_object() || v.is_array()) && v.empty();
}
bool isString(const json& v) { return v.is_string(); }
bool isNoneChoice(const json& v) { return v.is_string() && v.get<std::string>() == "none"; }
bool isTextFormat(const json& v) { return v.is_object() && v.size() == 1 && v.value("type", "") == "text"; }

enum class Use { Honoured, NeutralOnly, Informational };
struct FieldRule {
  const char* name;
  unsigned endpoints;
  Use use;
  bool (*neutral)(const json&) = never;  // NeutralOnly: the accepted values; Informational: the type
  const char* neutralText = "";          // what the error says is accepted
};

const FieldRule kFields[] = {
    {"model", kBoth, Use::Honoured},
    {"prompt", kCompletions, Use::Honoured},
    {"messages", kChat, Use::Honoured},
    {"n", kBoth, Use::Honoured},
    {"stream", kBoth, Use::Honoured},
    {"stream_options", kBoth, Use::Honoured},
    {"max_tokens", kBoth, Use::Honoured},
    {"max_completion_tokens", kChat, Use::Honoured},
    {"min_tokens", kBoth, Use::Honoured},
    {"ignore_eos", kBoth, Use::Honoured},
    {"temperature", kBoth, Use::Honoured},
    {"top_p", kBoth, Use::Honoured},
    {"top_k", kBoth, Use::Honoured},
    {"seed", kBoth, Use::Honoured},
    {"stop", kBoth, Use::Honoured},
    {"stop_token_ids", kBoth, Use::Honoured},
    {"user", kBoth, Use::Informational, isString},  // the client's own label; OpenAI uses it for abuse tracking
    {"logprobs", kCompletions, Use::NeutralOnly, never, "null"},
    {"logprobs", kChat, Use::NeutralOnly, isFalse, "false"},
    {"top_logprobs", kChat, Use::NeutralOnly, isZero, "0"},
    {"prompt_logprobs", kBoth, Use::NeutralOnly, never, "null"},
    {"echo", kBoth, Use::NeutralOnly, isFalse, "false"},
    {"best_of", kCompletions, Use::NeutralOnly, isOne, "1"},
    {"suffix", kCompletions, Use::NeutralOnly, isEmpty, "\"\""},
    {"presence_penalty", kBoth, Use::NeutralOnly, isZero, "0"},
    {"frequency_penalty", kBoth, Use::NeutralOnly, isZero, "0"},
    {"repetition_penalty", kBoth, Use::NeutralOnly, isOne, "1"},
    {"length_penalty", kBoth, Use::NeutralOnly, isOne, "1"},
    {"min_p", kBoth, Use::NeutralOnly, isZero, "0"},
    {"use_beam_search", kBoth, Use::NeutralOnly, isFalse, "false"},
    {"logit_bias", kBoth, Use::NeutralOnly, isEmpty, "{}"},
    {"allowed_token_ids", kBoth, Use::NeutralOnly, never, "null"},
    {"bad_words", kBoth, Use::NeutralOnly, isEmpty, "[]"},
    {"response_format", kBoth, Use::NeutralOnly, isTextFormat, "{\"type\": \"text\"}"},
    {"tools", kChat, Use::NeutralOnly, isEmpty, "[]"},
    {"tool_choice", kChat, Use::NeutralOnly, isNoneChoice, "\"none\""},
    {"parallel_tool_calls", kChat, Use::NeutralOnly, isBool, "a boolean (no tools are offered)"},
    {"include_stop_str_in_output", kBoth, Use::NeutralOnly, isFalse, "false"},
    {"skip_special_tokens", kBoth, Use::NeutralOnly, isTrue, "true"},
    {"spaces_between_special_tokens", kBoth, Use::NeutralOnly, isTrue, "true"},
    {"add_special_tokens", kCompletions, Use::NeutralOnly, isTrue, "true"},  // the prompt gets BOS
    {"add_special_tokens", kChat, Use::NeutralOnly, isFalse, "false"},       // the template has it
    {"add_generation_prompt", kChat, Use::NeutralOnly, isTrue, "true"},
    {"continue_final_message", kChat, Use::NeutralOnly, isFalse, "false"},
    {"truncate_prompt_tokens", kBoth, Use::NeutralOnly, never, "null"},
};

const FieldRule* ruleFor(const std::string& key, bool chat) {
  const unsigned endpoint = chat ? kChat : kCompletions;
  for (const auto& r : kFields)
    if (key == r.name && (r.endpoints & endpoint)) return &r;
  return nullptr;
}

// Throws for the first field that the server would otherwise have to ignore.
void rejectUnhonouredFields(const json& body, bool chat) {
  for (const auto& [key, value] : body.items()) {
    const FieldRule* rule = ruleFor(key, chat);
    if (!rule)
      throw ApiError::badRequest("'" + key + "' is not a parameter of " +
                                     (chat ? "/v1/chat/completions" : "/v1/completions") + " on this server",
                                 key);
    if (rule->use == Use::Honoured || value.is_null() || rule->neutral(value)) continue;
    if (rule->use == Use::Informational)
      throw ApiError::badRequest("'" + key + "' has the wrong type", key);
    const std::string accepted = std::string(rule->neutralText) == "null" ? "null" : rule->neutralText + std::string(" or null");
    throw ApiError::badRequest("'" + key + "' is not supported by this server (accepted: " + accepted + ")", key);
  }
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
    for (const auto& [key, value] : msg.items()) {
      if (key == "role" || key == "content" || value.is_null() || (key == "tool_calls" && isEmpty(value))) continue;
      throw ApiError::badRequest("message field '" + key + "' is not supported by this server", "messages");
    }
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
  rejectInvalidUtf8(text);
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    throw ApiError::badRequest(std::string("malformed JSON body: ") + e.what());
  }
  if (!body.is_object()) throw ApiError::badRequest("the request body must be a JSON object");
  rejectUnhonouredFields(body, chat);
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
    if (!r.stream)  // vLLM's wording: options for a stream that is not there would go unused
      throw ApiError::badRequest("Stream options can only be defined when `stream=True`.", "stream_options");
    r.includeUsage = boolField(*so, "include_usage", false);
    for (const auto& [key, value] : so->items())
      if (key != "include_usage" && !value.is_null() && !(key == "continuous_usage_stats" && isFalse(value)))
        throw ApiError::badRequest("'stream_options." + key + "' is not supported by this server", "stream_options");
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
