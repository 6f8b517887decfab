// Journey: what the Venues panel says when the provider side goes wrong — a key variable
// that is not set (named, not HOTAISLE_API_KEY, no "Unknown error"), a malformed API URL
// (refused before anything is sent), a provider failing every try (the message says how
// many tries, within the bound the user set) — and a failed fetch leaves nothing to rent.
#include <QSpinBox>
#include <QtTest>

#include "hotaisle_standin.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyProviderErrorsSayWhatHappened : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void errorsNameTheirCause() {
    HotAisleStandin standin;
    QVERIFY(standin.start() > 0);
    qunsetenv("CROSSLAB_JOURNEY_UNSET_KEY");
    qputenv("CROSSLAB_JOURNEY_HA_KEY", HotAisleStandin::kKey);
    qunsetenv("DBUS_SESSION_BUS_ADDRESS");  // no keyring to fall back on either
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openVenues(lab.path());
    QVERIFY(window);
    const QString url = QString::fromStdString(standin.baseUrl());

    // The key variable the form names is not set: that variable is named.
    QVERIFY(fillProviderForm(window.get(), url, "lab", "CROSSLAB_JOURNEY_UNSET_KEY"));
    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains("no Hot Aisle API key"); }, "the missing key"));
    QString status = venuesStatus(window.get());
    QVERIFY2(status.contains("CROSSLAB_JOURNEY_UNSET_KEY is not set") && !status.contains("HOTAISLE_API_KEY") &&
                 !status.contains("Unknown error"),
             qPrintable(status));

    // A malformed URL: refused at once, nothing sent.
    const int before = standin.requests();
    QVERIFY(fillProviderForm(window.get(), "htp:/admin.hotaisle.app/api", "lab", "CROSSLAB_JOURNEY_HA_KEY"));
    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains("is not an http(s) URL"); }, "the bad URL"));
    QCOMPARE(standin.requests(), before);

    // Offers, then a provider that fails every try: the error counts them; nothing stale to rent.
    QVERIFY(fillProviderForm(window.get(), url, "lab", "CROSSLAB_JOURNEY_HA_KEY"));
    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    auto* offers = waitFor<QTableView>(window.get(), "offersTable");
    QVERIFY(waitUntil([&] { return offers->model()->rowCount() == 2; }, "two offers"));
    standin.failNext(1000, 503);
    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains("HTTP 503"); }, "the failed fetch"));
    status = venuesStatus(window.get());
    QVERIFY2(status.contains("tries in"), qPrintable(status));
    QCOMPARE(offers->model()->rowCount(), 0);
    QVERIFY(clickButton(window.get(), "provisionButton"));
    QCOMPARE(venuesStatus(window.get()), QString("Choose an offer first"));
    standin.failNext(0, 503);
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyProviderErrorsSayWhatHappened)
#include "test_journey_provider_errors_say_what_happened.moc"
