// Journey (issue #11 close guards, #16 money): the user rents a box from the Venues panel and
// then quits. Before the window closes, Venues asks its own question (LabSession close check):
// which boxes still bill and what they cost so far, with Tear down / Leave running / Cancel.
// Cancel keeps the window and the box; Tear down deletes the VM at the provider, books its
// life once, and only then does the window close. The lab is sound afterwards.
#include <QTableView>
#include <QtTest>

#include "hotaisle_standin.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyQuitWhileABoxBills : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void quittingAsksAboutTheBillingBoxAndCanTearItDown() {
    HotAisleStandin standin;
    QVERIFY(standin.start() > 0);
    qputenv("CROSSLAB_JOURNEY_HOTAISLE_KEY", HotAisleStandin::kKey);
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openVenues(lab.path());
    QVERIFY(window);
    QVERIFY(fillProviderForm(window.get(), QString::fromStdString(standin.baseUrl()), "lab", "CROSSLAB_JOURNEY_HOTAISLE_KEY"));

    // Rent the 1× MI300X at $2.99/h.
    QVERIFY(fetchAndSelectOffer(window.get(), {"MI300X", "1", "$2.99"}));
    QVERIFY(rentSelectedOffer(window.get(), "$2.99/h"));
    const QString vm = QString::fromStdString(standin.vmNames().at(0));
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, "running"}) >= 0; }, "the VM running"));

    // Lab → Quit: Venues names the box and its price; Cancel keeps everything.
    QString asked;
    DialogDriver cancel("QMessageBox", [&](QWidget* d) {
      asked = static_cast<QMessageBox*>(d)->text();
      return d->objectName() == "billingQuestion" && answerMessageBox(d, "Cancel", vm);
    });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(cancel.wait(), qPrintable(cancel.error() + " / " + asked));
    QVERIFY2(asked.contains("$2.99/h") && asked.contains("Quit"), qPrintable(asked));
    QTest::qWait(200);  // a quit that went ahead anyway would hide the window by now
    QVERIFY(window->isVisible());
    QVERIFY(standin.deletes().empty());
    QVERIFY(rowWith(boxes->model(), {vm, "running"}) >= 0);

    // Lab → Quit, Tear down: the VM is deleted at the provider, its life booked once, then
    // the window closes.
    DialogDriver down("QMessageBox", [&](QWidget* d) {
      return d->objectName() == "billingQuestion" && answerMessageBox(d, "Tear down", vm);
    });
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY2(down.wait(), qPrintable(down.error()));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close after the teardown"));
    QCOMPARE(standin.deletes().size(), size_t{1});
    QVERIFY(QString::fromStdString(standin.deletes().front()).startsWith(vm + "?"));
    QVERIFY(standin.vmNames().empty());
    window.reset();
    const QString lifeId = labQuery(lab.path(), QString("SELECT id FROM boxes WHERE provider_vm = '%1'").arg(vm)).value(0);
    QVERIFY(!lifeId.isEmpty());
    QCOMPARE(rowCount(lab.path(), "ledger", "category = 'compute' AND box_id = " + lifeId), qint64(1));
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyQuitWhileABoxBills)
#include "test_journey_quit_while_a_box_bills.moc"
