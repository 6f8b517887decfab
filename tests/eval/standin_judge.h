#pragma once
// A stand-in for an OpenAI-compatible judge / generation endpoint on 127.0.0.1 (ephemeral
// port), speaking POST /v1/chat/completions with scripted behaviour chosen by the request's
// "model" field:
//   accept      every check passes            reject     check 3 fails
//   garbage     prose, never JSON              garbage-once  prose on the first call, then accept
//   slow        sleeps 1.5 s before replying   flaky      429 (Retry-After: 0), then 500, then accept
//   position-a  pairwise: always "A"           content    pairwise: the side containing "GOOD"
//   writer      generation: quotes the first 6 words of context [1]
// It records the Authorization headers and temperatures it saw.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

class StandinJudge {
 public:
  StandinJudge() {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StandinJudge() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int calls(const std::string& model) {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_[model];
  }
  std::vector<std::string> authorizations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return auth_;
  }
  std::vector<double> temperatures() {
    std::lock_guard<std::mutex> lock(mutex_);
    return temps_;
  }

 private:
  static std::string completion(const std::string& content) {
    return nlohmann::json{{"id", "chatcmpl-1"},
                          {"object", "chat.completion"},
                          {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
                          {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 20}, {"total_tokens", 120}}}}
        .dump();
  }
  static std::string verdict(bool check3) {
    return nlohmann::json{{"checks", {{"1", "pass"}, {"2", "pass"}, {"3", check3 ? "pass" : "fail"}, {"4", "pass"}}},
                          {"accept", check3},
                          {"reason", check3 ? "grounded" : "claim 2 unsupported"}}
        .dump();
  }
  // Which side of a pairwise prompt ("A: ... B: ...") holds the marker.
  static std::string sideWith(const std::string& prompt, const std::string& marker) {
    const auto a = prompt.find("<<A>>"), b = prompt.find("<<B>>"), m = prompt.find(marker);
    if (m == std::string::npos) return "tie";
    return (m > a && (m < b || b < a)) ? "A" : "B";
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    const auto body = nlohmann::json::parse(req.body);
    const std::string model = body.at("model");
    const std::string prompt = body.at("messages").at(0).at("content");
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      n = ++calls_[model];
      auth_.push_back(req.get_header_value("Authorization"));
      temps_.push_back(body.value("temperature", -1.0));
    }
    std::string content;
    if (model == "accept") content = "```json\n" + verdict(true) + "\n```";
    else if (model == "reject") content = verdict(false);
    else if (model == "garbage") content = "Looks good to me!";
    else if (model == "garbage-once") content = n == 1 ? "Sure, here is my verdict: PASS" : verdict(true);
    else if (model == "slow") {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      content = verdict(true);
    } else if (model == "flaky") {
      if (n == 1) {
        res.status = 429;
        res.set_header("Retry-After", "0");
        res.set_content(R"({"error": {"message": "rate limited"}})", "application/json");
        return;
      }
      if (n == 2) {
        res.status = 500;
        res.set_content(R"({"error": {"message": "overloaded"}})", "application/json");
        return;
      }
      content = verdict(true);
    } else if (model == "position-a") content = R"({"winner": "A", "reason": "first is better"})";
    else if (model == "content") content = nlohmann::json{{"winner", sideWith(prompt, "GOOD")}, {"reason", "r"}}.dump();
    else if (model == "writer") content = writerReply(prompt);
    else {
      res.status = 404;
      res.set_content(R"({"error": {"message": "no such model"}})", "application/json");
      return;
    }
    res.set_content(completion(content), "application/json");
  }

  static std::string writerReply(const std::string& prompt) {
    const auto start = prompt.find("[1] ");
    std::string quote;
    if (start != std::string::npos) {
      size_t pos = start + 4, words = 0;
      while (pos < prompt.size() && words < 6 && prompt[pos] != '\n') {
        if (prompt[pos] == ' ') ++words;
        if (words < 6) quote += prompt[pos];
        ++pos;
      }
    }
    return nlohmann::json{{"answer", "see evidence"}, {"evidence", {quote}}}.dump();
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, int> calls_;
  std::vector<std::string> auth_;
  std::vector<double> temps_;
};
