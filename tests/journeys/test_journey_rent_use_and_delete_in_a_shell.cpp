// Journey: the user fetches offers and rents the 1× MI300X from the loopback Hot Aisle
// stand-in; while the rent is in flight the Provision button does nothing; once running,
// a command runs on the box (a real sshd stands in for the VM's), answering a real
// question about its host key; then the VM is deleted from a shell with `crosslab-cli
// venues delete`. The window shows the life ended within seconds and books it once; the
// ladder holds the probe and the timeline every milestone of the life, plus one the user
// enters and two imported from a file.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QTemporaryDir>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QtTest>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "hotaisle_standin.h"
#include "sshd_fixture.h"
#include "tests/journeys/venues_journey.h"
#include "widgets/boxes_model.h"

using namespace crosslab;
using namespace crosslab::journey;

namespace {

bool listHas(QListWidget* list, const QString& text) {
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->text().contains(text)) return true;
  return false;
}

}  // namespace

class TestJourneyRentUseAndDeleteInAShell : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void aLifeFromRentToShellDeleteIsRecordedAndBookedOnce() {
    HotAisleStandin standin;
    QVERIFY(standin.start() > 0);
    standin.pollsUntilRunning = 1;  // one "provisioning" poll: the rent stays in flight a while
    SshdFixture sshd;
    QString why;
    QVERIFY2(sshd.start(&why), qPrintable(why));
    qputenv("CROSSLAB_JOURNEY_HOTAISLE_KEY", HotAisleStandin::kKey);
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openVenues(lab.path());
    QVERIFY(window);
    QVERIFY(fillProviderForm(window.get(), QString::fromStdString(standin.baseUrl()), "lab", "CROSSLAB_JOURNEY_HOTAISLE_KEY"));

    // Fetch: a probe on the ladder. Rent the 1× MI300X.
    QVERIFY(clickButton(window.get(), "fetchOffersButton"));
    auto* offers = waitFor<QTableView>(window.get(), "offersTable");
    QVERIFY(waitUntil([&] { return offers->model()->rowCount() == 2; }, "two offers"));
    QVERIFY(clickRow(offers, rowWith(offers->model(), {"MI300X", "1", "$2.99"})));
    DialogDriver confirm("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "$2.99/h"); });
    auto* provision = qobject_cast<QPushButton*>(findButton(window.get(), "provisionButton"));
    QVERIFY(provision);
    QVERIFY(click(provision));
    QVERIFY2(confirm.wait(), qPrintable(confirm.error()));
    // A second click while the rent is in flight does nothing: the button is disabled.
    QVERIFY(waitUntil([&] { return standin.provisionPosts() == 1; }, "the rent request"));
    QVERIFY(!provision->isEnabled());
    QTest::mouseClick(provision, Qt::LeftButton);
    QTest::keyClick(provision, Qt::Key_Space);
    QVERIFY(waitUntil([&] { return venuesStatus(window.get()).contains(": done"); }, "the rent to finish"));
    QCOMPARE(standin.provisionPosts(), 1);
    QVERIFY(provision->isEnabled());
    const QString vm = QString::fromStdString(standin.vmNames().at(0));
    // The header, on the Offers tab too: what bills now, at what rate, and its cost so far.
    QVERIFY2(venuesHeader(window.get()).contains("1 billing at $2.99/h") &&
                 !venuesHeader(window.get()).contains("Running cost $0.00"),  // the minimum minute from the start
             qPrintable(venuesHeader(window.get())));

    // The box runs. Its sshd here is the loopback one (the VM's own would be at port 22).
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, "running"}) >= 0; }, "the VM running"));
    QVERIFY(labWriteBesideWindow(
        lab.path(), QString("UPDATE boxes SET port = %1, ssh_user = '%2', key_file = '%3' WHERE provider_vm = '%4'")
                        .arg(sshd.port())
                        .arg(sshd.user(), sshd.userKey(), vm)));
    const QString address = QString("%1@127.0.0.1:%2").arg(sshd.user()).arg(sshd.port());
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, address}) >= 0; }, "the box's new address shown"));
    // The meter moves each second (uptime), the lab's record of the life unchanged.
    const auto uptime = [&] { return boxes->model()->index(rowWith(boxes->model(), {vm}), widgets::BoxesModel::Uptime).data().toString(); };
    const QString before = uptime();
    QVERIFY2(waitUntil([&] { return uptime() != before; }, "the uptime to move"), qPrintable(before + " -> " + uptime()));
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {vm})));
    auto* command = waitFor<QLineEdit>(window.get(), "commandEdit");
    QVERIFY(typeInto(command, "echo hello from the box"));
    DialogDriver hostKey("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "SHA256:"); });
    QTest::keyClick(command, Qt::Key_Return);
    QVERIFY2(hostKey.wait(), qPrintable(hostKey.error()));
    auto* log = waitFor<QPlainTextEdit>(window.get(), "boxLog");
    QVERIFY(waitUntil([&] { return log->toPlainText().contains("[exit 0]"); }, "the command's exit in the log"));
    QVERIFY(log->toPlainText().contains("hello from the box"));

    // A shell deletes the VM; the window shows the life ended within seconds.
    const auto r = runCliBesideWindow({"venues", "delete", vm, "--lab", lab.path()});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(standin.vmNames().empty());
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm}) < 0; }, "the ended life gone from the active boxes"));
    QVERIFY2(venuesHeader(window.get()).contains("nothing billing"), qPrintable(venuesHeader(window.get())));
    QVERIFY(click(waitFor<QCheckBox>(window.get(), "showEndedCheck")));
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {vm, "deleted"}) >= 0; }, "the ended life shown"));
    // Tear down on the ended life: nothing to do, nothing booked twice.
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {vm})));
    QVERIFY(clickButton(window.get(), "teardownButton"));
    QVERIFY2(venuesStatus(window.get()).contains("ended already"), qPrintable(venuesStatus(window.get())));
    const QString lifeId = labQuery(lab.path(), QString("SELECT id FROM boxes WHERE provider_vm = '%1'").arg(vm)).value(0);
    // Booked once, by the ledger (core/ledger): one life.deleted event.
    QCOMPARE(rowCount(lab.path(), "events", "type = 'life.deleted' AND box_id = " + lifeId), qint64(1));

    // The ladder: the probe on the hotaisle rung; the timeline: every milestone of the life.
    QVERIFY(showVenuesTab(window.get(), "Ladder"));
    auto* ladder = waitFor<QTableWidget>(window.get(), "ladderTable");
    QVERIFY(waitUntil([&] { return rowWith(ladder->model(), {"hotaisle", "available", "$2.99"}) >= 0; },
                      "the probe on the ladder"));
    QVERIFY(clickRow(ladder, rowWith(ladder->model(), {"hotaisle"})));
    auto* probes = waitFor<QListWidget>(window.get(), "probeList");
    QVERIFY(waitUntil([&] { return listHas(probes, "from $2.99/h"); }, "the probe listed"));
    auto* timeline = waitFor<QListWidget>(window.get(), "timelineList");
    for (const char* m : {"provision request", "provisioned", "running", "ssh ready", "deleted"})
      QVERIFY2(listHas(timeline, QString("  %1").arg(m)), m);
    for (const char* m : {"provisioned", "running", "ssh ready", "deleted"})
      QCOMPARE(rowCount(lab.path(), "timeline", QString("milestone = '%1' AND box_id = %2").arg(m, lifeId)), qint64(1));

    // What the provider cannot tell: entered, and imported from a file.
    DialogDriver add("crosslab::widgets::MilestoneDialog", [](QWidget* d) {
      auto* name = d->findChild<QComboBox*>("milestoneName");
      if (!name || !typeInto(name->lineEdit(), "first token")) return false;
      return clickButton(d, "milestoneOk");
    });
    QVERIFY(clickButton(window.get(), "addMilestoneButton"));
    QVERIFY2(add.wait(), qPrintable(add.error()));
    QVERIFY(waitUntil([&] { return listHas(timeline, "first token  (entered)"); }, "the entered milestone"));
    QTemporaryDir files;
    const QString file = files.filePath("account.jsonl");
    QFile out(file);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write("{\"milestone\": \"account created\", \"at\": \"2026-01-01T00:45:14Z\"}\n"
              "{\"milestone\": \"key minted\", \"at\": \"2026-01-01T22:30:00Z\"}\n");
    out.close();
    DialogDriver pick("QFileDialog", [file](QWidget* d) { return typeFullPathInFileDialog(d, file); });
    QVERIFY(clickButton(window.get(), "importTimelineButton"));
    QVERIFY2(pick.wait(), qPrintable(pick.error()));
    QVERIFY(waitUntil([&] { return listHas(timeline, "key minted  (imported)"); }, "the imported milestones"));
    QCOMPARE(rowCount(lab.path(), "timeline", "source = 'imported'"), qint64(2));
    auto* summary = waitFor<QLabel>(window.get(), "timelineSummary");
    QVERIFY2(summary->text().contains("Account to silicon"), qPrintable(summary->text()));

    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyRentUseAndDeleteInAShell)
#include "test_journey_rent_use_and_delete_in_a_shell.moc"
