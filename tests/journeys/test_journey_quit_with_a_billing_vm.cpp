// Journey (issue #16 item 3): the user rents a VM and presses Lab → Quit while it bills. The
// window asks first, naming the VM, its price and its cost so far; Cancel keeps everything.
// Leave running closes the window with the VM still up; a new window on the same lab shows
// it billing. Quit there and Tear down: the VM is deleted at the provider, its life ended and
// booked once, and only then does the window close.
#include <QtTest>

#include "hotaisle_standin.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

// Lab → Quit answered in the billing question by `button`; false when it was not asked
// or did not name `expect`.
bool quitAnswering(widgets::MainWindow* window, const QString& button, const QStringList& expect) {
  DialogDriver ask("QMessageBox", [&](QWidget* d) {
    auto* box = qobject_cast<QMessageBox*>(d);
    if (!box || box->objectName() != "billingQuestion") {
      qWarning("not the billing question: %s", box ? qPrintable(box->text()) : "?");
      return false;
    }
    if (!box->defaultButton() || box->defaultButton()->text().remove('&') != "Cancel") {
      qWarning("the billing question's default button is not Cancel");
      return false;
    }
    for (const auto& e : expect)
      if (!box->text().contains(e)) {
        qWarning("the billing question does not say '%s': %s", qPrintable(e), qPrintable(box->text()));
        return false;
      }
    return answerMessageBox(d, button);
  });
  if (!chooseMenu(window, "Lab", "Quit")) return false;
  if (!ask.wait()) {
    qWarning("%s", qPrintable(ask.error()));
    return false;
  }
  return true;
}

}  // namespace

class TestJourneyQuitWithABillingVm : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void quitAsksNamesTheVmAndCanTearItDown() {
    HotAisleStandin standin;
    QVERIFY(standin.start() > 0);
    standin.pollsUntilRunning = 0;
    qputenv("CROSSLAB_JOURNEY_QUIT_KEY", HotAisleStandin::kKey);
    DemoLab lab;
    QVERIFY(lab.ok());
    QString vm;
    {
      auto window = openVenues(lab.path());
      QVERIFY(window);
      QVERIFY(fillProviderForm(window.get(), QString::fromStdString(standin.baseUrl()), "lab", "CROSSLAB_JOURNEY_QUIT_KEY"));
      QVERIFY(clickButton(window.get(), "fetchOffersButton"));
      auto* offers = waitFor<QTableView>(window.get(), "offersTable");
      QVERIFY(waitUntil([&] { return offers->model()->rowCount() == 2; }, "two offers"));
      QVERIFY(clickRow(offers, rowWith(offers->model(), {"MI300X", "1", "$2.99"})));
      DialogDriver confirm("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "$2.99/h"); });
      QVERIFY(clickButton(window.get(), "provisionButton"));
      QVERIFY2(confirm.wait(), qPrintable(confirm.error()));
      QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains(": done"); }, "the rent"));
      vm = QString::fromStdString(standin.vmNames().at(0));

      // Quit, Cancel: the window stays, the VM bills on.
      QVERIFY(quitAnswering(window.get(), "Cancel", {vm, "$2.99/h", "so far"}));
      QTest::qWait(200);  // a quit that went ahead anyway would hide the window by now
      QVERIFY(window->isVisible());
      QCOMPARE(standin.vmNames().size(), size_t{1});

      // Quit, Leave running: the window closes, the VM stays up and recorded.
      QVERIFY(quitAnswering(window.get(), "Leave running", {vm}));
      QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
      QCOMPARE(standin.vmNames().size(), size_t{1});
      QVERIFY(standin.deletes().empty());
    }

    // A new window on the lab shows it billing; Quit, Tear down: deleted, then closed.
    auto window = openVenues(lab.path());
    QVERIFY(window);
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, "running"}) >= 0; }, "the VM shown after reopening"));
    QVERIFY2(venuesHeader(window.get()).contains("1 billing at $2.99/h"), qPrintable(venuesHeader(window.get())));
    QVERIFY(quitAnswering(window.get(), "Tear down", {vm}));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close after the teardown"));
    QVERIFY(standin.vmNames().empty());
    QCOMPARE(standin.deletes().size(), size_t{1});
    window.reset();
    const QString life = QString("(SELECT id FROM boxes WHERE provider_vm = '%1')").arg(vm);
    QCOMPARE(rowCount(lab.path(), "boxes", "deleted_at IS NOT NULL AND id = " + life), qint64(1));
    QCOMPARE(rowCount(lab.path(), "timeline", "milestone = 'deleted' AND box_id = " + life), qint64(1));
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyQuitWithABillingVm)
#include "test_journey_quit_with_a_billing_vm.moc"
