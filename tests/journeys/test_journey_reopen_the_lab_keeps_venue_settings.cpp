// Journey: the user points the Venues form at a provider (URL, team, key variable, how long
// to wait, idle threshold, ended lives shown), rents a VM and leaves it running; the window
// goes away and a new one opens the same lab: every setting is back, the VM is there and
// still billing. The user then types another URL into the form (another team's endpoint)
// and tears the VM down: the DELETE goes where the VM was rented, not where the form points.
#include <QCheckBox>
#include <QSpinBox>
#include <QtTest>

#include "hotaisle_standin.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

bool setSpin(QWidget* root, const QString& name, int value) {
  auto* spin = waitFor<QSpinBox>(root, name);
  if (!spin || !click(spin)) return false;
  QTest::keyClick(spin, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(spin, QString::number(value));
  QTest::keyClick(spin, Qt::Key_Return);
  return spin->value() == value;
}

}  // namespace

class TestJourneyReopenKeepsVenueSettings : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void settingsSurviveAndTeardownReachesTheRightUrl() {
    HotAisleStandin standin;
    QVERIFY(standin.start() > 0);
    standin.pollsUntilRunning = 0;
    qputenv("CROSSLAB_JOURNEY_HA_KEY", HotAisleStandin::kKey);
    DemoLab lab;
    QVERIFY(lab.ok());
    const QString url = QString::fromStdString(standin.baseUrl());
    QString vm;
    {
      auto window = openVenues(lab.path());
      QVERIFY(window);
      QVERIFY(fillProviderForm(window.get(), url, "lab", "CROSSLAB_JOURNEY_HA_KEY"));
      QVERIFY(setSpin(window.get(), "providerTimeoutSpin", 45));
      QVERIFY(clickButton(window.get(), "fetchOffersButton"));
      auto* offers = waitFor<QTableView>(window.get(), "offersTable");
      QVERIFY(waitUntil([&] { return offers->model()->rowCount() == 2; }, "two offers"));
      QVERIFY(clickRow(offers, rowWith(offers->model(), {"MI300X", "1", "$2.99"})));
      DialogDriver confirm("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "$2.99/h"); });
      QVERIFY(clickButton(window.get(), "provisionButton"));
      QVERIFY2(confirm.wait(), qPrintable(confirm.error()));
      QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains(": done"); }, "the rent"));
      vm = QString::fromStdString(standin.vmNames().at(0));
      QVERIFY(showVenuesTab(window.get(), "Boxes"));
      QVERIFY(setSpin(window.get(), "idleMinutesSpin", 20));
      QVERIFY(click(waitFor<QCheckBox>(window.get(), "showEndedCheck")));
    }  // the window is gone; the VM bills on

    auto window = openVenues(lab.path());
    QVERIFY(window);
    QVERIFY(showVenuesTab(window.get(), "Offers"));
    QCOMPARE(waitFor<QLineEdit>(window.get(), "apiUrlEdit")->text(), url);
    QCOMPARE(waitFor<QLineEdit>(window.get(), "teamEdit")->text(), QString("lab"));
    QCOMPARE(waitFor<QLineEdit>(window.get(), "apiKeyEnvEdit")->text(), QString("CROSSLAB_JOURNEY_HA_KEY"));
    QCOMPARE(waitFor<QSpinBox>(window.get(), "providerTimeoutSpin")->value(), 45);
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    QCOMPARE(waitFor<QSpinBox>(window.get(), "idleMinutesSpin")->value(), 20);
    QVERIFY(waitFor<QCheckBox>(window.get(), "showEndedCheck")->isChecked());
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, "running"}) >= 0; }, "the VM still there"));

    // The form now points elsewhere; Tear down still reaches the stand-in it was rented from.
    QVERIFY(fillProviderForm(window.get(), "https://elsewhere.invalid/api", "other-team", "NO_SUCH_VARIABLE"));
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {vm})));
    DialogDriver sure("QMessageBox", [&](QWidget* box) { return answerDefaultNo(box, "Yes", url); });
    QVERIFY(clickButton(window.get(), "teardownButton"));
    QVERIFY2(sure.wait(), qPrintable(sure.error()));
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, "deleted"}) >= 0; }, "the life ended"));
    QVERIFY(standin.vmNames().empty());
    QCOMPARE(standin.deletes().size(), size_t{1});
    QCOMPARE(rowCount(lab.path(), "events",  // booked once, by the ledger: one life.deleted event
                      QString("type = 'life.deleted' AND box_id = (SELECT id FROM boxes WHERE provider_vm = '%1')").arg(vm)),
             qint64(1));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyReopenKeepsVenueSettings)
#include "test_journey_reopen_the_lab_keeps_venue_settings.moc"
