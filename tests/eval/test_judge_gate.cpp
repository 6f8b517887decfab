// The judge gate through the real HTTP client against a stand-in OpenAI-compatible judge
// on loopback: agreement, disagreement, garbage (bounded retries -> abstention), timeouts,
// 429/500 with retry, pairwise swap consistency, and the API key kept out of results.
#include <QtTest>

#include "backends/openai_chat_client.h"
#include "core/eval/judge_gate.h"
#include "standin_judge.h"

using namespace crosslab;

namespace {

eval::EvalQuestion question() {
  return {"q1", "How long did training run?", {"The run took 111 steps over three epochs."}, std::nullopt};
}

eval::GateSpec gate(const std::string& url, std::vector<std::string> models, bool pairwise = false) {
  eval::GateSpec g;
  g.name = "test";
  g.pairwise = pairwise;
  g.checks = {2, 3, 4};
  g.rubric = pairwise ? "Q: {{question}}\n<<A>> {{output_a}}\n<<B>> {{output_b}}"
                      : "Q: {{question}}\nContexts:\n{{contexts}}\nAnswer: {{output}}";
  g.maxAttempts = 2;
  g.timeoutS = 5;
  g.httpRetries = 2;
  g.backoffS = 0.01;
  for (const auto& m : models) g.judges.push_back({m, url, m, ""});
  return g;
}

std::string noKey(const std::string&) { return {}; }

}  // namespace

class TestJudgeGate : public QObject {
  Q_OBJECT
 private slots:
  void acceptsOnlyWhenAllJudgesAgree() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    eval::JudgeGate both(gate(judge.url(), {"accept", "accept"}), client, noKey);
    auto r = both.judge(question(), "111 steps");
    QCOMPARE(QString::fromStdString(r.verdict), QString("accept"));
    QCOMPARE(r.judges.size(), size_t(2));
    QCOMPARE(r.judges[0].promptTokens, 100L);
    QCOMPARE(r.judges[0].replies.size(), size_t(1));
    QVERIFY(r.judges[0].latencyMs > 0);
    for (double t : judge.temperatures()) QCOMPARE(t, 0.0);

    eval::JudgeGate split(gate(judge.url(), {"accept", "reject"}), client, noKey);
    auto d = split.judge(question(), "111 steps");
    QCOMPARE(QString::fromStdString(d.verdict), QString("reject"));
    QCOMPARE(QString::fromStdString(d.judges[1].verdict), QString("reject"));
    QCOMPARE(d.judges[1].checks.at(3), false);
  }

  void checksOutsideTheGateDoNotCount() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    auto spec = gate(judge.url(), {"reject"});
    spec.checks = {2, 4};  // the judge fails check 3 only
    eval::JudgeGate g(spec, client, noKey);
    QCOMPARE(QString::fromStdString(g.judge(question(), "x").verdict), QString("accept"));
  }

  void garbageIsRetriedThenAbstainsNeverAccepts() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    eval::JudgeGate g(gate(judge.url(), {"accept", "garbage"}), client, noKey);
    auto r = g.judge(question(), "111 steps");
    QCOMPARE(QString::fromStdString(r.verdict), QString("abstain"));
    QCOMPARE(QString::fromStdString(r.judges[1].verdict), QString("abstain"));
    QCOMPARE(judge.calls("garbage"), 2);  // max_attempts
    QCOMPARE(r.judges[1].replies.size(), size_t(2));
    QCOMPARE(r.judges[1].replies[0], std::string("Looks good to me!"));

    eval::JudgeGate once(gate(judge.url(), {"garbage-once"}), client, noKey);
    auto ok = once.judge(question(), "111 steps");
    QCOMPARE(QString::fromStdString(ok.verdict), QString("accept"));
    QCOMPARE(judge.calls("garbage-once"), 2);
  }

  // A judge that never answered did not measure: not a reject, not an abstention.
  void timeoutsAreNotMeasured() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    auto spec = gate(judge.url(), {"slow"});
    spec.timeoutS = 0.3;
    spec.httpRetries = 0;
    spec.maxAttempts = 1;
    eval::JudgeGate g(spec, client, noKey);
    auto r = g.judge(question(), "x");
    QCOMPARE(QString::fromStdString(r.verdict), QString("not_measured"));
    QCOMPARE(QString::fromStdString(r.judges[0].verdict), QString("not_measured"));
    QVERIFY(!r.judges[0].answered());
    QCOMPARE(r.judges[0].errors.size(), size_t(1));
    QVERIFY(QString::fromStdString(r.judges[0].errors[0]).contains("failed"));
  }

  // Unreachable judges (connection refused): the gate is not measured unless a reached
  // judge already rejects (one reject rejects, whatever the others would have said).
  void unreachableJudgesAreNotMeasured() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    const std::string nowhere = "http://127.0.0.1:1";
    auto only = gate(nowhere, {"accept"});
    only.httpRetries = 0;
    eval::JudgeGate g(only, client, noKey);
    auto r = g.judge(question(), "x");
    QCOMPARE(QString::fromStdString(r.verdict), QString("not_measured"));
    QVERIFY(QString::fromStdString(r.judges[0].reason).startsWith("no answer: "));

    auto mixed = gate(judge.url(), {"accept"});
    mixed.httpRetries = 0;
    mixed.judges.push_back({"gone", nowhere, "accept", ""});
    eval::JudgeGate m(mixed, client, noKey);
    r = m.judge(question(), "x");
    QCOMPARE(QString::fromStdString(r.verdict), QString("not_measured"));  // accept needs every judge
    QCOMPARE(QString::fromStdString(r.judges[0].verdict), QString("accept"));

    auto rejecting = gate(judge.url(), {"reject"});
    rejecting.httpRetries = 0;
    rejecting.judges.push_back({"gone", nowhere, "accept", ""});
    eval::JudgeGate rj(rejecting, client, noKey);
    QCOMPARE(QString::fromStdString(rj.judge(question(), "x").verdict), QString("reject"));

    auto pair = gate(nowhere, {"position-a"}, true);
    pair.httpRetries = 0;
    eval::JudgeGate p(pair, client, noKey);
    QCOMPARE(QString::fromStdString(p.judgePair(question(), "a", "b").verdict), QString("not_measured"));
  }

  void rateLimitAndServerErrorAreRetried() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    eval::JudgeGate g(gate(judge.url(), {"flaky"}), client, noKey);
    auto r = g.judge(question(), "x");
    QCOMPARE(QString::fromStdString(r.verdict), QString("accept"));
    QCOMPARE(r.judges[0].requests, 3);
    QCOMPARE(judge.calls("flaky"), 3);
  }

  void httpRetriesAreBounded() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    eval::ChatRequest req{judge.url() + "/v1", "flaky", "", "hi", 5, 1, 0.01, 16};
    auto r = client.complete(req);  // 429, then 500: out of retries
    QVERIFY(!r.ok);
    QCOMPARE(r.attempts, 2);
    QCOMPARE(r.httpStatus, 500);
    QVERIFY(QString::fromStdString(r.error).contains("overloaded"));
  }

  void pairwiseCountsOnlyConsistentVerdicts() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    eval::JudgeGate biased(gate(judge.url(), {"position-a"}, true), client, noKey);
    auto p = biased.judgePair(question(), "GOOD answer", "weak answer");
    QCOMPARE(QString::fromStdString(p.verdict), QString("inconsistent"));

    eval::JudgeGate fair(gate(judge.url(), {"content"}, true), client, noKey);
    QCOMPARE(QString::fromStdString(fair.judgePair(question(), "GOOD answer", "weak").verdict), QString("x"));
    QCOMPARE(QString::fromStdString(fair.judgePair(question(), "weak", "GOOD answer").verdict), QString("y"));
    QCOMPARE(QString::fromStdString(fair.judgePair(question(), "same", "same").verdict), QString("tie"));

    eval::JudgeGate mixed(gate(judge.url(), {"content", "position-a"}, true), client, noKey);
    QCOMPARE(QString::fromStdString(mixed.judgePair(question(), "GOOD", "weak").verdict), QString("disagree"));
  }

  void apiKeyComesFromTheEnvironmentOnly() {
    StandinJudge judge;
    backends::OpenAiChatClient client;
    auto spec = gate(judge.url(), {"accept"});
    spec.judges[0].apiKeyEnv = "CROSSLAB_TEST_JUDGE_KEY";
    QVERIFY_THROWS_EXCEPTION(eval::EvalError, eval::JudgeGate(spec, client, noKey));
    eval::JudgeGate g(spec, client, [](const std::string& name) {
      return name == "CROSSLAB_TEST_JUDGE_KEY" ? std::string("sk-secret-123") : std::string();
    });
    auto r = g.judge(question(), "x");
    QCOMPARE(QString::fromStdString(r.verdict), QString("accept"));
    QCOMPARE(judge.authorizations().back(), std::string("Bearer sk-secret-123"));
  }

  void endpointUrls() {
    std::string origin, path;
    QVERIFY(backends::OpenAiChatClient::splitUrl("http://127.0.0.1:8000", &origin, &path));
    QCOMPARE(origin + path, std::string("http://127.0.0.1:8000/v1/chat/completions"));
    QVERIFY(backends::OpenAiChatClient::splitUrl("http://h:1/v1/", &origin, &path));
    QCOMPARE(path, std::string("/v1/chat/completions"));
    QVERIFY(backends::OpenAiChatClient::splitUrl("https://g.example/v1beta/openai", &origin, &path));
    QCOMPARE(origin + path, std::string("https://g.example/v1beta/openai/chat/completions"));
    QVERIFY(!backends::OpenAiChatClient::splitUrl("ftp://x", &origin, &path));
    QVERIFY(!backends::OpenAiChatClient::splitUrl("127.0.0.1:8000", &origin, &path));
  }

  void gateFileErrorsAreOneLine() {
    QVERIFY_THROWS_EXCEPTION(eval::EvalError, eval::parseGateSpec("{}", ".", "g.json"));
    const std::string bad = R"({"judges": [{"url": "http://x", "model": "m"}], "rubric": "{{nope}}"})";
    try {
      eval::parseGateSpec(bad, ".", "g.json");
      QFAIL("expected an error");
    } catch (const eval::EvalError& e) {
      QCOMPARE(QString(e.what()), QString("rubric: unknown placeholder {{nope}}"));
    }
    const std::string keyInFile = R"({"judges": [{"url": "http://x", "model": "m", "api_key": "sk"}], "rubric": "x"})";
    QVERIFY_THROWS_EXCEPTION(eval::EvalError, eval::parseGateSpec(keyInFile, ".", "g.json"));
  }
};

QTEST_GUILESS_MAIN(TestJudgeGate)
#include "test_judge_gate.moc"
