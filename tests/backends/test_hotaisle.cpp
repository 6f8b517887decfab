// HotAisleClient against a local stand-in that implements Hot Aisle's documented API,
// and against loopback servers that misbehave: silent, 429 with Retry-After, a reply cut
// mid-body. Every call is bounded, cancellable, and a rent is sent exactly once.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <set>
#include <chrono>
#include <limits>
#include <thread>

#include "backends/providers/hotaisle_client.h"
#include "backends/providers/hotaisle_venue.h"
#include "hotaisle_standin.h"
#include "misbehaving_server.h"

using crosslab::providers::Failure;
using crosslab::providers::HotAisleClient;
using crosslab::providers::HotAisleOptions;
using crosslab::providers::ProviderError;

namespace {

// Qt's own warnings seen while a test runs (none may reach the user).
QStringList gQtWarnings;
void collectQtWarnings(QtMsgType type, const QMessageLogContext&, const QString& message) {
  if (type != QtDebugMsg && type != QtInfoMsg) gQtWarnings << message;
  else fprintf(stderr, "%s\n", qPrintable(message));
}

const char* kOffersBody =
    R"([{"Specs": {"cpu_cores": 8, "gpus": [{"count": 1, "model": "MI300X"}]}, "OnDemandPrice": 299}])";

// A reply cut in the middle (as an escaped string: moc stumbles on unbalanced brackets
// inside raw strings).
const char* kCutBody = "[{\"Specs\": {\"cpu_co";

}  // namespace

class TestHotAisle : public QObject {
  Q_OBJECT
  HotAisleStandin standin_;

  HotAisleClient client(const char* key = HotAisleStandin::kKey) {
    HotAisleOptions o;
    o.baseUrl = QString::fromStdString(standin_.baseUrl());
    o.team = HotAisleStandin::kTeam;
    o.apiKey = key;
    o.backoffMs = 5;  // fast retries in tests; the delay itself is not asserted
    o.timeoutMs = 10000;
    return HotAisleClient(o);
  }

  template <typename F>
  static int statusOf(F&& f, QString* message = nullptr) {
    try {
      f();
    } catch (const ProviderError& e) {
      if (message) *message = e.what();
      return e.httpStatus();
    }
    return -1;
  }

  // The error a call ends with (it must end with one).
  template <typename F>
  static ProviderError failureOf(F&& f) {
    try {
      f();
    } catch (const ProviderError& e) {
      return e;
    }
    return ProviderError("no error", -1, Failure::Http, 0);
  }

  static HotAisleOptions misbehaving(const MisbehavingServer& server) {
    HotAisleOptions o;
    o.baseUrl = QString::fromStdString(server.url());
    o.team = "lab";
    o.apiKey = "k";
    o.backoffMs = 5;
    return o;
  }

 private slots:
  void initTestCase() {
    QVERIFY(standin_.start() > 0);
    qInstallMessageHandler(collectQtWarnings);
  }

  void init() { gQtWarnings.clear(); }

  void cleanup() { QVERIFY2(gQtWarnings.isEmpty(), qPrintable(gQtWarnings.join(" | "))); }

  void validKeyListsTeams() {
    const auto teams = client().validateKey();
    QCOMPARE(teams.size(), size_t{1});
    QCOMPARE(QString::fromStdString(teams[0]), QString("lab"));
  }

  void rejectedKeyIsAClear401() {
    QString msg;
    QCOMPARE(statusOf([&] { client("wrong-key-1234567890").validateKey(); }, &msg), 401);
    QVERIFY(msg.contains("rejected the API key"));
    QVERIFY(!msg.contains("wrong-key"));  // the key never appears in an error
  }

  void missingPermissionIsAClear403() {
    QString msg;
    QCOMPARE(statusOf([&] { client(HotAisleStandin::kNoPermissionKey).registerSshKey("ssh-ed25519 AAAA x"); }, &msg), 403);
    QVERIFY(msg.contains("permission"));
  }

  void sshKeyRegisteredThenAlreadyThere() {
    auto c = client();
    QVERIFY(c.registerSshKey("ssh-ed25519 AAAAC3Nza test@home"));
    QVERIFY(!c.registerSshKey("ssh-ed25519 AAAAC3Nza test@home"));  // 409 is fine
  }

  void offersParsePriceSpecsAndMinimum() {
    const auto offers = client().offers();
    QCOMPARE(offers.size(), size_t{2});
    const auto& two = offers[0];
    QCOMPARE(QString::fromStdString(two.gpuModel), QString("MI300X"));
    QCOMPARE(two.gpuCount, 2);
    QCOMPARE(two.vcpus, 26);
    QCOMPARE(two.pricePerHour, 5.98);
    QCOMPARE(two.pricePerGpuHour(), 2.99);
    QCOMPARE(two.minMinutes, 60);
    QCOMPARE(two.ramGb, 448.0);
    QCOMPARE(two.diskGb, 12000.0);
    QCOMPARE(offers[1].pricePerHour, 2.99);
    QCOMPARE(offers[1].minMinutes, 1);
    QCOMPARE(offers[1].quantity, 3);
  }

  // The replies' reader on its own (fuzz/fuzz_provider_replies.cpp drives it with any bytes).
  void offersReplyNullMeansNothingOnTheShelf() {
    // Hot Aisle answers a bare null when nothing is available: no offers, not an error.
    QVERIFY(crosslab::providers::readOffers("null").empty());
    QVERIFY(crosslab::providers::readOffers("[]").empty());
    QVERIFY_THROWS_EXCEPTION(crosslab::providers::BadReply, crosslab::providers::readOffers("<html>502</html>"));
    QVERIFY_THROWS_EXCEPTION(crosslab::providers::BadReply, crosslab::providers::readOffers("{}"));
  }

  void replyNumbersPastIntAreClamped() {
    // Counts and minutes the provider sends as huge numbers: read as int's bounds, never
    // a float cast out of range or a signed overflow (UBSan's findings on the old reader).
    const auto offers = crosslab::providers::readOffers(
        "[{\"OnDemandPrice\": 299, \"Quantity\": 1e300, \"MinimumReservationMinutes\": -1e300,"
        " \"Specs\": {\"cpu_cores\": 0, \"cpus\": {\"cores\": 65536, \"count\": 65536},"
        " \"gpus\": [{\"count\": 2147483647, \"model\": \"MI300X\"}, {\"count\": 2147483647}]}}]");
    QCOMPARE(offers.size(), size_t{1});
    QCOMPARE(offers[0].quantity, std::numeric_limits<int>::max());
    QCOMPARE(offers[0].minMinutes, std::numeric_limits<int>::min());
    QCOMPARE(offers[0].gpuCount, std::numeric_limits<int>::max());
    QCOMPARE(offers[0].vcpus, std::numeric_limits<int>::max());
    QCOMPARE(offers[0].pricePerHour, 2.99);
    QVERIFY_THROWS_EXCEPTION(crosslab::providers::BadReply, crosslab::providers::readState("{\"state\": 3}"));
  }

  void retriesOn503And429ThenSucceeds() {
    standin_.failNext(2, 503);
    const int before = standin_.requests();
    QCOMPARE(client().offers().size(), size_t{2});
    QCOMPARE(standin_.requests() - before, 3);
    standin_.failNext(1, 429);
    QCOMPARE(client().offers().size(), size_t{2});
  }

  void givesUpAfterMaxAttempts() {
    standin_.failNext(10, 502);
    QString msg;
    QCOMPARE(statusOf([&] { client().offers(); }, &msg), 502);
    QVERIFY(msg.contains("HTTP 502"));
    standin_.failNext(0, 503);
  }

  void provisionPollDeleteLifecycle() {
    auto c = client();
    const auto offers = c.offers();
    const auto vm = c.provision(offers[1]);
    QVERIFY(!vm.name.empty());
    QCOMPARE(QString::fromStdString(vm.ipAddress), QString("127.0.0.1"));
    // The body posted is the chosen offer's Specs.
    const auto posted = nlohmann::json::parse(standin_.lastProvisionBody());
    QCOMPARE(posted["gpus"][0]["count"].get<int>(), 1);
    QVERIFY(!standin_.sawKeyInBody());
    std::vector<std::string> states;
    c.waitRunning(vm.name, 1, 30, nullptr, [&](const std::string& s) { states.push_back(s); });
    QCOMPARE(QString::fromStdString(states.back()), QString("running"));
    QVERIFY(states.size() >= 2);
    QVERIFY(c.remove(vm.name));
    QVERIFY(!c.remove(vm.name));  // 404 = already gone
  }

  void silentProviderIsGivenUpOnWithinTheBound() {
    MisbehavingServer server;
    QVERIFY(server.start() > 0);
    server.script({MisbehavingServer::silence()});
    auto o = misbehaving(server);
    o.timeoutMs = 400;    // each try
    o.deadlineMs = 1500;  // all tries, backoff included
    const auto e = failureOf([&] { HotAisleClient(o).offers(); });
    QCOMPARE(e.failure(), Failure::NoAnswer);
    const QString msg = e.what();
    QVERIFY2(msg.contains("did not answer in time"), qPrintable(msg));
    QVERIFY2(msg.contains(QString("%1 tries").arg(e.attempts())), qPrintable(msg));
    QVERIFY(e.attempts() >= 2 && e.attempts() <= 4);  // retried, but only within the bound
    QCOMPARE(server.requests(), e.attempts());
    QVERIFY2(!msg.contains("refused"), qPrintable(msg));  // the right reason
  }

  void cancelStopsARequestInFlight() {
    MisbehavingServer server;
    QVERIFY(server.start() > 0);
    server.script({MisbehavingServer::silence()});
    auto o = misbehaving(server);
    o.timeoutMs = o.deadlineMs = 600000;  // only Cancel can end this call
    std::atomic<bool> cancel{false};
    o.cancel = &cancel;
    std::atomic<bool> done{false};
    ProviderError seen("", -1);
    std::thread call([&] {
      seen = failureOf([&] { HotAisleClient(o).offers(); });
      done = true;
    });
    QTRY_COMPARE_WITH_TIMEOUT(server.requests(), 1, 30000);
    const auto asked = std::chrono::steady_clock::now();
    cancel = true;
    QTRY_VERIFY_WITH_TIMEOUT(done.load(), 30000);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count();
    call.join();
    qInfo("cancel answered after %.0f ms", ms);  // reported, not asserted (a loaded machine)
    QCOMPARE(seen.failure(), Failure::Cancelled);
    QCOMPARE(seen.attempts(), 1);
    QCOMPARE(server.requests(), 1);  // nothing sent after Cancel
  }

  void tooManyRequestsHonoursRetryAfter() {
    MisbehavingServer server;
    QVERIFY(server.start() > 0);
    server.script({MisbehavingServer::reply(429, R"({"detail":"slow down"})", "Retry-After: 1\r\n"),
                   MisbehavingServer::reply(200, kOffersBody)});
    auto o = misbehaving(server);
    const auto offers = HotAisleClient(o).offers();
    QCOMPARE(offers.size(), size_t{1});
    QCOMPARE(offers[0].pricePerHour, 2.99);
    QCOMPARE(server.requests(), 2);
  }

  void retryAfterPastTheBoundGivesUpAtOnce() {
    MisbehavingServer server;
    QVERIFY(server.start() > 0);
    server.script({MisbehavingServer::reply(429, R"({"detail":"slow down"})", "Retry-After: 3600\r\n")});
    auto o = misbehaving(server);
    const auto e = failureOf([&] { HotAisleClient(o).offers(); });
    QCOMPARE(e.httpStatus(), 429);
    QCOMPARE(e.attempts(), 1);
    QVERIFY2(QString(e.what()).contains("asked to wait 3600 s"), e.what());
    QCOMPARE(server.requests(), 1);
  }

  void replyCutMidBodyIsRetriedAndNamed() {
    MisbehavingServer server;
    QVERIFY(server.start() > 0);
    server.script({MisbehavingServer::cutReply(kCutBody, 400),
                   MisbehavingServer::reply(200, kOffersBody)});
    auto o = misbehaving(server);
    QCOMPARE(HotAisleClient(o).offers().size(), size_t{1});  // a read is repeated
    QCOMPARE(server.requests(), 2);
    server.script({MisbehavingServer::cutReply(kCutBody, 400)});
    o.maxAttempts = 2;
    const auto e = failureOf([&] { HotAisleClient(o).offers(); });
    QCOMPARE(e.failure(), Failure::Interrupted);
    QVERIFY2(QString(e.what()).contains("closed the connection"), e.what());
    QVERIFY2(QString(e.what()).contains("2 tries"), e.what());
  }

  void aRentIsSentOnceWhateverHappens() {
    MisbehavingServer server;
    QVERIFY(server.start() > 0);
    crosslab::providers::Offer offer;
    offer.specs = {{"gpus", {{{"count", 1}, {"model", "MI300X"}}}}};
    // 500: the provider may have rented it. One POST, and the error says so.
    server.script({MisbehavingServer::reply(500, R"({"detail":"oops"})")});
    auto o = misbehaving(server);
    auto e = failureOf([&] { HotAisleClient(o).provision(offer); });
    QCOMPARE(server.requests(), 1);
    QVERIFY(e.ambiguous());
    QVERIFY2(QString(e.what()).contains("not repeated"), e.what());
    // Silence: no second POST when the try times out either.
    server.script({MisbehavingServer::silence()});
    o.timeoutMs = 300;
    o.deadlineMs = 5000;
    e = failureOf([&] { HotAisleClient(o).provision(offer); });
    QCOMPARE(server.requests(), 2);
    QVERIFY(e.ambiguous());
    QCOMPARE(e.failure(), Failure::NoAnswer);
    // 429 was not processed: not ambiguous, and not repeated either.
    server.script({MisbehavingServer::reply(429, "{}", "Retry-After: 0\r\n")});
    e = failureOf([&] { HotAisleClient(o).provision(offer); });
    QCOMPARE(server.requests(), 3);
    QVERIFY(!e.ambiguous());
  }

  void ambiguousRentListsTheTeamsVms() {
    crosslab::providers::HotAisleOptions o;
    o.baseUrl = QString::fromStdString(standin_.baseUrl());
    o.team = HotAisleStandin::kTeam;
    o.apiKey = HotAisleStandin::kKey;
    o.backoffMs = 5;
    const auto offers = HotAisleClient(o).offers();
    const auto before = standin_.vmNames();
    const int posts = standin_.provisionPosts();
    standin_.failProvisionAfterCreate(500);
    std::set<std::string> known(before.begin(), before.end());
    const auto outcome = crosslab::providers::provisionOnce(o, offers[1], known);
    QCOMPARE(standin_.provisionPosts() - posts, 1);  // exactly one POST
    QVERIFY(!outcome.vm);
    QVERIFY(outcome.ambiguous && outcome.listed);
    QCOMPARE(outcome.appeared.size(), size_t{1});  // the VM the 500 hid
    const auto text = QString::fromStdString(crosslab::providers::describeOutcome(outcome));
    QVERIFY2(text.contains(QString::fromStdString(outcome.appeared[0].name)), qPrintable(text));
    QVERIFY2(text.contains("HTTP 500"), qPrintable(text));
    QVERIFY(HotAisleClient(o).remove(outcome.appeared[0].name));
  }

  void malformedUrlFailsAtOnceWithoutSending() {
    for (const char* url : {"htp:/admin.hotaisle.app/api", "admin.hotaisle.app/api", "http:///api", "ftp://x/api"}) {
      HotAisleOptions o;
      o.baseUrl = url;
      o.team = "lab";
      o.apiKey = "k";
      const auto e = failureOf([&] { HotAisleClient(o).offers(); });
      QCOMPARE(e.failure(), Failure::BadRequest);
      QCOMPARE(e.attempts(), 0);
      QVERIFY2(QString(e.what()).contains(url), e.what());
    }
  }

  void deleteIsForcedInsideTheMinimum() {
    auto c = client();
    const auto vm = c.provision(c.offers()[1]);
    QVERIFY(c.remove(vm.name));
    QVERIFY(standin_.deletes().back() == vm.name + "?force=true");
  }

  void unreachableServerIsAClearError() {
    HotAisleOptions o;
    o.baseUrl = "http://127.0.0.1:1/api";
    o.team = "lab";
    o.apiKey = "k";
    o.maxAttempts = 2;
    o.backoffMs = 1;
    QString msg;
    QCOMPARE(statusOf([&] { HotAisleClient(o).offers(); }, &msg), 0);
    QVERIFY(msg.contains("cannot reach Hot Aisle"));
    QVERIFY2(msg.contains("2 tries"), qPrintable(msg));
  }
};

QTEST_GUILESS_MAIN(TestHotAisle)
#include "test_hotaisle.moc"
