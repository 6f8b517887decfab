#include "backends/openai_chat_client.h"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace crosslab::backends {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void setTimeouts(httplib::Client& c, double seconds) {
  const auto us = static_cast<long>(std::max(0.001, seconds) * 1e6);
  c.set_connection_timeout(us / 1000000, us % 1000000);
  c.set_read_timeout(us / 1000000, us % 1000000);
  c.set_write_timeout(us / 1000000, us % 1000000);
}

std::string errorMessage(const httplib::Result& res) {
  const json body = json::parse(res->body, nullptr, false);
  std::string msg;
  if (!body.is_discarded() && body.is_object() && body.contains("error")) {
    const auto& e = body["error"];
    msg = e.is_object() && e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : e.dump();
  }
  if (msg.size() > 200) msg.resize(200);
  return "HTTP " + std::to_string(res->status) + (msg.empty() ? "" : ": " + msg);
}

// Fills content and usage from a 200 reply; false with an error when it does not fit.
bool readReply(const std::string& body, eval::ChatResult& r) {
  const json doc = json::parse(body, nullptr, false);
  try {
    if (doc.is_discarded()) throw std::runtime_error("reply is not JSON");
    const auto& msg = doc.at("choices").at(0).at("message");
    r.content = msg.at("content").is_string() ? msg.at("content").get<std::string>() : std::string();
    if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
      r.promptTokens = u->value("prompt_tokens", 0L);
      r.completionTokens = u->value("completion_tokens", 0L);
    }
    return true;
  } catch (const std::exception& e) {
    r.error = std::string("malformed chat completion: ") + e.what();
    return false;
  }
}

double retryAfter(const httplib::Result& res, double fallback) {
  if (!res || !res->has_header("Retry-After")) return fallback;
  try {
    return std::min(30.0, std::stod(res->get_header_value("Retry-After")));
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

bool OpenAiChatClient::splitUrl(const std::string& url, std::string* origin, std::string* path) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return false;
  const auto s = url.substr(0, scheme);
  if (s != "http" && s != "https") return false;
  const auto slash = url.find('/', scheme + 3);
  *origin = url.substr(0, slash);
  std::string base = slash == std::string::npos ? "" : url.substr(slash);
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string tail = "/chat/completions";
  // Like an OpenAI SDK base_url ("…/v1", "…/v1beta/openai"); a bare host gets vLLM's "/v1".
  if (base.empty()) *path = "/v1" + tail;
  else if (base.size() >= tail.size() && base.compare(base.size() - tail.size(), tail.size(), tail) == 0) *path = base;
  else *path = base + tail;
  return origin->size() > scheme + 3;
}

eval::ChatResult OpenAiChatClient::complete(const eval::ChatRequest& req) {
  eval::ChatResult r;
  std::string origin, path;
  if (!splitUrl(req.url, &origin, &path)) {
    r.error = "not an http(s) URL: " + req.url;
    return r;
  }
  httplib::Client client(origin);
  setTimeouts(client, req.timeoutS);
  httplib::Headers headers;
  if (!req.apiKey.empty()) headers.emplace("Authorization", "Bearer " + req.apiKey);
  const std::string body = json{{"model", req.model},
                                {"messages", json::array({{{"role", "user"}, {"content", req.prompt}}})},
                                {"temperature", 0},
                                {"max_tokens", req.maxTokens}}
                               .dump();
  double backoff = req.backoffS;
  for (int attempt = 0; attempt <= req.retries; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    const auto t0 = Clock::now();
    auto res = client.Post(path, headers, body, "application/json");
    r.latencyMs += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ++r.attempts;
    if (!res) {
      r.error = "request to " + origin + " failed: " + httplib::to_string(res.error());
      spdlog::info("chat: attempt {} to {}: {}", attempt + 1, origin, r.error);
      backoff *= 2;
      continue;
    }
    r.httpStatus = res->status;
    if (res->status == 429 || res->status >= 500) {
      r.error = errorMessage(res);
      spdlog::info("chat: attempt {} to {}: {}", attempt + 1, origin, r.error);
      backoff = std::max(backoff * 2, retryAfter(res, 0));
      continue;
    }
    if (res->status != 200) {
      r.error = errorMessage(res);
      return r;
    }
    r.ok = readReply(res->body, r);
    if (r.ok) r.error.clear();
    return r;
  }
  return r;
}

}  // namespace crosslab::backends
