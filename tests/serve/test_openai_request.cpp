// Request bodies of /v1/completions and /v1/chat/completions as the server parses them:
// every field is honoured, accepted at the value that changes nothing, or refused with a
// 400 naming it (never ignored); a body that is not UTF-8 is a 400 naming the field that
// holds the bad byte, and the error body itself stays valid JSON.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "backends/serve/api_error.h"
#include "backends/serve/openai_request.h"

using namespace crosslab;
using nlohmann::json;

namespace {

// The ApiError a body raises (status 0 when it parses).
serve::ApiError errorOf(const std::string& body, bool chat) {
  try {
    serve::parseOpenAiRequest(body, chat);
  } catch (const serve::ApiError& e) {
    return e;
  }
  return serve::ApiError(0, "", "parsed");
}

const json kPrompt = {{"prompt", "hello"}};
const json kChat = {{"messages", {{{"role", "user"}, {"content", "hello"}}}}};

json with(json base, const std::string& key, const json& value) {
  base[key] = value;
  return base;
}

}  // namespace

class TestOpenAiRequest : public QObject {
  Q_OBJECT
 private slots:
  void invalidUtf8IsA400NamingTheField() {
    const std::string body = std::string("{\"model\": \"tiny\", \"prompt\": \"caf\xC3\x28\", \"max_tokens\": 4}");
    const auto e = errorOf(body, false);
    QCOMPARE(e.status(), 400);
    QCOMPARE(e.type(), std::string("BadRequestError"));
    QCOMPARE(e.param(), std::string("prompt"));
    QVERIFY2(std::string(e.what()).find("not valid UTF-8") != std::string::npos, e.what());

    // (no raw string literals in this file: moc's tokenizer misreads them)
    // Inside a chat message, deep in the body: the top-level field is named.
    const std::string chat = std::string("{\"messages\": [{\"role\": \"user\", \"content\": \"x\xFF\"}]}");
    QCOMPARE(errorOf(chat, true).param(), std::string("messages"));
    // In a key: no field to name, still a 400.
    const std::string inKey = std::string("{\"prompt\": \"x\", \"a\x80\": 1}");
    const auto k = errorOf(inKey, false);
    QCOMPARE(k.status(), 400);
    QCOMPARE(k.param(), std::string());
    // Outside any string (a stray byte): 400 as well.
    QCOMPARE(errorOf(std::string("{\"prompt\": \"x\"}\xFE"), false).status(), 400);
  }

  void errorBodyIsJsonEvenForBadBytes() {
    // A message quoting the client's bytes (a parse error's "last read") must not break the body.
    const std::string body = serve::errorBody(400, "BadRequestError", std::string("bad \xFF\xFE bytes"), "prompt");
    const json j = json::parse(body);
    QCOMPARE(j["error"]["code"].get<int>(), 400);
    QCOMPARE(j["error"]["param"].get<std::string>(), std::string("prompt"));
    QVERIFY(j["error"]["message"].get<std::string>().find("bytes") != std::string::npos);
  }

  void logprobsIsRefusedNotIgnored() {
    for (const json& v : {json(3), json(0)}) {
      const auto e = errorOf(with(kPrompt, "logprobs", v).dump(), false);
      QCOMPARE(e.status(), 400);
      QCOMPARE(e.param(), std::string("logprobs"));
      QVERIFY2(std::string(e.what()).find("not supported") != std::string::npos, e.what());
    }
    const auto chat = errorOf(with(kChat, "logprobs", true).dump(), true);
    QCOMPARE(chat.param(), std::string("logprobs"));
    QCOMPARE(errorOf(with(kChat, "top_logprobs", 2).dump(), true).param(), std::string("top_logprobs"));
    // The values that ask for nothing pass: null everywhere, false on chat.
    QCOMPARE(errorOf(with(kPrompt, "logprobs", nullptr).dump(), false).status(), 0);
    QCOMPARE(errorOf(with(kChat, "logprobs", false).dump(), true).status(), 0);
  }

  // Fields the server does not implement: accepted at their neutral value, refused otherwise.
  void unimplementedFieldsAtNeutralValuesOnly() {
    struct Case {
      const char* field;
      json neutral, other;
      bool chat;
    };
    const Case cases[] = {
        {"presence_penalty", 0.0, 0.5, false},
        {"frequency_penalty", 0, 1.2, true},
        {"repetition_penalty", 1.0, 1.1, false},
        {"min_p", 0, 0.05, false},
        {"best_of", 1, 3, false},
        {"echo", false, true, false},
        {"suffix", "", "tail", false},
        {"logit_bias", json::object(), {{"50256", -100}}, false},
        {"use_beam_search", false, true, false},
        {"response_format", {{"type", "text"}}, {{"type", "json_object"}}, true},
        {"tools", json::array(), json::array({{{"type", "function"}}}), true},
        {"tool_choice", "none", "auto", true},
        {"include_stop_str_in_output", false, true, false},
        {"skip_special_tokens", true, false, false},
        {"add_special_tokens", true, false, false},
        {"add_special_tokens", false, true, true},
        {"add_generation_prompt", true, false, true},
        {"continue_final_message", false, true, true},
        {"prompt_logprobs", nullptr, 1, false},
        {"truncate_prompt_tokens", nullptr, 8, false},
    };
    for (const auto& c : cases) {
      const json base = c.chat ? kChat : kPrompt;
      const auto ok = errorOf(with(base, c.field, c.neutral).dump(), c.chat);
      QVERIFY2(ok.status() == 0, (std::string(c.field) + ": " + ok.what()).c_str());
      const auto e = errorOf(with(base, c.field, c.other).dump(), c.chat);
      QVERIFY2(e.status() == 400, c.field);
      QCOMPARE(e.param(), std::string(c.field));
      QVERIFY2(std::string(e.what()).find("not supported") != std::string::npos, e.what());
    }
  }

  void unknownFieldsAreNamed() {
    auto e = errorOf(with(kPrompt, "temprature", 0.5).dump(), false);
    QCOMPARE(e.status(), 400);
    QCOMPARE(e.param(), std::string("temprature"));
    // A field of the other endpoint is unknown here.
    QCOMPARE(errorOf(with(kPrompt, "max_completion_tokens", 5).dump(), false).param(), std::string("max_completion_tokens"));
    QCOMPARE(errorOf(with(kChat, "suffix", "x").dump(), true).param(), std::string("suffix"));
    // Inside stream_options and inside a message.
    e = errorOf(with(with(kPrompt, "stream", true), "stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}})
                    .dump(),
                false);
    QCOMPARE(e.param(), std::string("stream_options"));
    QVERIFY2(std::string(e.what()).find("continuous_usage_stats") != std::string::npos, e.what());
    e = errorOf(json{{"messages", {{{"role", "user"}, {"content", "x"}, {"name", "bob"}}}}}.dump(), true);
    QCOMPARE(e.param(), std::string("messages"));
    QVERIFY2(std::string(e.what()).find("'name'") != std::string::npos, e.what());
    // Options for a stream that is not requested would be ignored: refused, as vLLM does.
    e = errorOf(with(kPrompt, "stream_options", {{"include_usage", true}}).dump(), false);
    QCOMPARE(e.param(), std::string("stream_options"));
    // "user" is the client's label, any string.
    QCOMPARE(errorOf(with(kPrompt, "user", "alice").dump(), false).status(), 0);
    QCOMPARE(errorOf(with(kPrompt, "user", 5).dump(), false).param(), std::string("user"));
  }

  // What the clients of this project and vLLM's bench send is all honoured.
  void honouredFieldsArrive() {
    const json body = {{"model", "tiny"},     {"prompt", "hi"},   {"max_tokens", 7},   {"min_tokens", 2},
                       {"ignore_eos", true},  {"temperature", 0}, {"top_p", 0.5},      {"top_k", 3},
                       {"seed", 11},          {"stop", {"x"}},    {"stop_token_ids", {5}}, {"n", 1},
                       {"stream", true},      {"stream_options", {{"include_usage", true}}},
                       {"logprobs", nullptr}, {"best_of", 1},     {"repetition_penalty", 1.0}};
    const auto r = serve::parseOpenAiRequest(body.dump(), false);
    QCOMPARE(r.model, std::string("tiny"));
    QCOMPARE(r.maxTokens.value_or(-1), 7);
    QCOMPARE(r.gen.minTokens, 2);
    QVERIFY(r.gen.ignoreEos && r.stream && r.includeUsage);
    QCOMPARE(r.gen.sampling.topK, 3);
    QCOMPARE(r.gen.sampling.seed, uint64_t(11));
    QCOMPARE(r.gen.stopStrings, std::vector<std::string>{"x"});
    QCOMPARE(r.gen.stopIds, std::vector<int32_t>{5});
    const auto c = serve::parseOpenAiRequest(with(kChat, "max_completion_tokens", 9).dump(), true);
    QCOMPARE(c.maxTokens.value_or(-1), 9);
    QCOMPARE(c.messages.size(), size_t(1));
  }
};

QTEST_APPLESS_MAIN(TestOpenAiRequest)
#include "test_openai_request.moc"
