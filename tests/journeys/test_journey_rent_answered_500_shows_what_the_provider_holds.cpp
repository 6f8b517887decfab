// Journey: the user fetches offers, chooses the 1× MI300X and rents it; the provider (the
// loopback Hot Aisle stand-in) creates the VM but answers HTTP 500. The window sends the
// rent request exactly once, lists the team's VMs instead of retrying, says what it found,
// and shows the VM that appeared as a billing box; the user tears it down from the window
// and its life is booked once.
#include <QtTest>

#include "hotaisle_standin.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyRentAnswered500 : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void aFailedRentIsSentOnceAndTheVmItMadeIsShown() {
    HotAisleStandin standin;
    QVERIFY(standin.start() > 0);
    qputenv("CROSSLAB_JOURNEY_HOTAISLE_KEY", HotAisleStandin::kKey);
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openVenues(lab.path());
    QVERIFY(window);
    QVERIFY(fillProviderForm(window.get(), QString::fromStdString(standin.baseUrl()), "lab", "CROSSLAB_JOURNEY_HOTAISLE_KEY"));

    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    auto* offers = waitFor<QTableView>(window.get(), "offersTable");
    QVERIFY(offers);
    QVERIFY(waitUntil([&] { return offers->model()->rowCount() == 2; }, "two offers"));
    QVERIFY(clickRow(offers, rowWith(offers->model(), {"MI300X", "1", "$2.99"})));

    standin.failProvisionAfterCreate(500);
    const int postsBefore = standin.provisionPosts();
    DialogDriver confirm("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "$2.99/h"); });
    QVERIFY(clickButton(window.get(), "provisionButton"));
    QVERIFY2(confirm.wait(), qPrintable(confirm.error()));
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains("HTTP 500"); }, "the rent's failure in the status"));
    const QString status = venuesStatus(window.get());
    QCOMPARE(standin.provisionPosts() - postsBefore, 1);  // exactly one POST
    const auto held = standin.vmNames();
    QCOMPARE(held.size(), size_t{1});
    const QString vm = QString::fromStdString(held[0]);
    QVERIFY2(status.contains("not repeated") && status.contains(vm), qPrintable(status));

    // The VM the 500 hid is a billing box in the window and in the lab.
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(boxes);
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm}) >= 0; }, "the VM in the boxes table"));
    QCOMPARE(rowCount(lab.path(), "boxes", QString("provider_vm = '%1' AND deleted_at IS NULL AND price_per_hour = 2.99").arg(vm)),
             qint64(1));

    // Tear it down from the window: the DELETE reaches the stand-in, the life is booked once.
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {vm})));
    DialogDriver sure("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "Tear down"); });
    QVERIFY(clickButton(window.get(), "teardownButton"));
    QVERIFY2(sure.wait(), qPrintable(sure.error()));
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm}) < 0; }, "the box gone from the table"));
    QVERIFY(standin.vmNames().empty());
    QCOMPARE(rowCount(lab.path(), "events",  // booked once, by the ledger: one life.deleted event
                      QString("type = 'life.deleted' AND box_id = (SELECT id FROM boxes WHERE provider_vm = '%1')").arg(vm)),
             qint64(1));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyRentAnswered500)
#include "test_journey_rent_answered_500_shows_what_the_provider_holds.moc"
