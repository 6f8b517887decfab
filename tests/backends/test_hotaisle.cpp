// HotAisleClient against a local stand-in that implements Hot Aisle's documented API.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "backends/providers/hotaisle_client.h"
#include "hotaisle_standin.h"

using crosslab::providers::HotAisleClient;
using crosslab::providers::HotAisleOptions;
using crosslab::providers::ProviderError;

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

 private slots:
  void initTestCase() { QVERIFY(standin_.start() > 0); }

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
  }
};

QTEST_GUILESS_MAIN(TestHotAisle)
#include "test_hotaisle.moc"
