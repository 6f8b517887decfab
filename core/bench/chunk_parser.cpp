#include "core/bench/chunk_parser.h"

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "core/bench/sse_splitter.h"

namespace crosslab::bench {

namespace od = simdjson::ondemand;

struct ChunkParser::Impl {
  od::parser parser;
};

ChunkParser::ChunkParser() : impl_(std::make_unique<Impl>()) {}
ChunkParser::~ChunkParser() = default;

namespace {

std::string shorten(std::string_view s, size_t max = 80) {
  return s.size() <= max ? std::string(s) : std::string(s.substr(0, max)) + "…";
}

bool nonEmptyString(od::value v) {
  if (v.type() != od::json_type::string) return false;
  return !std::string_view(v.get_string()).empty();
}

// choices: [] or [{"text": …} | {"delta": {"content": …}}]
void readChoices(od::value v, ChunkInfo& info) {
  od::array arr = v.get_array();
  for (od::value choice : arr) {
    if (info.kind != ChunkInfo::Kind::Choices) info.kind = ChunkInfo::Kind::Choices;
    if (choice.type() != od::json_type::object) continue;
    for (auto field : choice.get_object()) {
      const std::string_view key = field.unescaped_key();
      if (key == "text") {
        info.hasText = info.hasText || nonEmptyString(field.value());
      } else if (key == "delta") {
        od::value delta = field.value();
        if (delta.type() != od::json_type::object) continue;
        for (auto d : delta.get_object())
          if (std::string_view(d.unescaped_key()) == "content")
            info.hasText = info.hasText || nonEmptyString(d.value());
      }
    }
    break;  // choices[0] only, as vLLM's client reads it
  }
}

void readUsage(od::value v, ChunkInfo& info) {
  if (v.type() != od::json_type::object) return;
  for (auto field : v.get_object()) {
    const std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (val.type() != od::json_type::number) continue;
    if (key == "completion_tokens") info.completionTokens = val.get_int64();
    if (key == "prompt_tokens") info.promptTokens = val.get_int64();
  }
}

std::string readError(od::value v) {
  if (v.type() == od::json_type::string) return std::string(std::string_view(v.get_string()));
  if (v.type() != od::json_type::object) return "error";
  for (auto field : v.get_object())
    if (std::string_view(field.unescaped_key()) == "message") {
      od::value m = field.value();
      if (m.type() == od::json_type::string) return std::string(std::string_view(m.get_string()));
    }
  return "error";
}

}  // namespace

ChunkInfo ChunkParser::parse(std::string& payload) {
  ChunkInfo info;
  if (payload == "[DONE]") {
    info.kind = ChunkInfo::Kind::Done;
    return info;
  }
  if (payload.capacity() < payload.size() + SseSplitter::kPadding)
    payload.reserve(payload.size() + SseSplitter::kPadding);
  try {
    od::document doc = impl_->parser.iterate(payload.data(), payload.size(), payload.capacity());
    od::object obj = doc.get_object();
    bool sawChoices = false;
    for (auto field : obj) {
      const std::string_view key = field.unescaped_key();
      if (key == "choices") {
        sawChoices = true;
        readChoices(field.value(), info);
      } else if (key == "usage") {
        readUsage(field.value(), info);
      } else if (key == "error") {
        info.kind = ChunkInfo::Kind::Error;
        info.error = readError(field.value());
      }
    }
    if (info.kind == ChunkInfo::Kind::Other && (sawChoices || info.completionTokens))
      info.kind = info.completionTokens ? ChunkInfo::Kind::Usage : ChunkInfo::Kind::Other;
  } catch (const simdjson::simdjson_error& e) {
    info = ChunkInfo{};
    info.kind = ChunkInfo::Kind::Malformed;
    info.error = std::string("malformed JSON in SSE data (") + e.what() + "): " + shorten(payload);
  }
  return info;
}

std::string errorMessageFromBody(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (j.contains("error") && j["error"].is_object() && j["error"].value("message", "") != "")
      return j["error"]["message"].get<std::string>();
    if (j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
    if (j.contains("message") && j["message"].is_string()) return j["message"].get<std::string>();
    if (j.contains("detail") && j["detail"].is_string()) return j["detail"].get<std::string>();
  }
  std::string s = shorten(body, 200);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.empty() ? "(empty body)" : s;
}

}  // namespace crosslab::bench
