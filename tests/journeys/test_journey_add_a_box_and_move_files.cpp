// Journey: in a lab without boxes, Run and Tear down say what is missing; "Choose an offer
// first" stays on the Offers tab. The user adds a box through Add box… (a real sshd on
// loopback), runs a command whose long output the log follows, pushes a file to the box
// and pulls it back (its unknown host key asked once, as a question with its fingerprint),
// then forgets the box and finds its ended life under "Show ended lives".
#include <QCheckBox>
#include <QFile>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QtTest>

#include "sshd_fixture.h"
#include "tests/journeys/venues_journey.h"

using namespace crosslab;
using namespace crosslab::journey;

class TestJourneyAddABoxAndMoveFiles : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void addABoxRunAndMoveFiles() {
    SshdFixture sshd;
    QString why;
    QVERIFY2(sshd.start(&why), qPrintable(why));
    DemoLab lab;
    QVERIFY(lab.ok());
    auto window = openVenues(lab.path());
    QVERIFY(window);

    // Nothing selected, nothing there: each button says what is missing.
    QVERIFY(showVenuesTab(window.get(), "Offers"));
    QVERIFY(clickButton(window.get(), "provisionButton"));
    QCOMPARE(venuesStatus(window.get()), QString("Choose an offer first"));
    QVERIFY(showVenuesTab(window.get(), "Boxes"));
    QVERIFY2(!venuesStatus(window.get()).contains("Choose an offer"), qPrintable(venuesStatus(window.get())));
    QVERIFY(clickButton(window.get(), "runButton"));
    QVERIFY2(venuesStatus(window.get()).contains("No box to run a command on"), qPrintable(venuesStatus(window.get())));
    QVERIFY(clickButton(window.get(), "teardownButton"));
    QVERIFY2(venuesStatus(window.get()).contains("No box to tear down"), qPrintable(venuesStatus(window.get())));

    QVERIFY(addLoopbackBox(window.get(), sshd, "loop"));
    auto* boxes = waitFor<QTableView>(window.get(), "boxesTable");
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {"loop", "ready"}) >= 0; }, "the added box"));
    QCOMPARE(rowCount(lab.path(), "boxes", "name = 'loop' AND deleted_at IS NULL AND price_per_hour IS NULL"), qint64(1));
    {  // the new box came selected: a Ctrl+click unselects it
      const int row = rowWith(boxes->model(), {"loop"});
      QTest::mouseClick(boxes->viewport(), Qt::LeftButton, Qt::ControlModifier,
                        boxes->visualRect(boxes->model()->index(row, 0)).center());
      QVERIFY(boxes->selectionModel()->selectedRows().isEmpty());
    }
    QVERIFY(clickButton(window.get(), "pushButton"));
    QVERIFY2(venuesStatus(window.get()).contains("Select a box to push a file to"), qPrintable(venuesStatus(window.get())));
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {"loop"})));

    // A long output: the log follows it to the end.
    auto* command = waitFor<QLineEdit>(window.get(), "commandEdit");
    QVERIFY(typeInto(command, "seq 1 3000"));
    DialogDriver hostKey("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "SHA256:"); });
    QVERIFY(clickButton(window.get(), "runButton"));
    QVERIFY2(hostKey.wait(), qPrintable(hostKey.error()));
    auto* log = waitFor<QPlainTextEdit>(window.get(), "boxLog");
    QVERIFY(waitUntil([&] { return log->toPlainText().contains("3000\n[exit 0]"); }, "the whole output"));
    QVERIFY(waitUntil([&] { return log->verticalScrollBar()->value() == log->verticalScrollBar()->maximum(); },
                      "the log scrolled to its end"));
    QVERIFY(log->verticalScrollBar()->maximum() > 0);

    // Push a file, pull it back.
    QTemporaryDir here, there;
    const QString local = here.filePath("notes.txt");
    QFile f(local);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("grounded answers only\n");
    f.close();
    const QString remote = there.filePath("on-the-box.txt");
    QVERIFY(enterField(window.get(), "remotePathEdit", remote));
    DialogDriver pickLocal("QFileDialog", [&](QWidget* d) { return typeFullPathInFileDialog(d, local); });
    QVERIFY(clickButton(window.get(), "pushButton"));
    QVERIFY2(pickLocal.wait(), qPrintable(pickLocal.error()));
    QVERIFY(waitUntil([&] { return log->toPlainText().contains("pushed to " + remote); }, "the push"));
    QVERIFY(QFile::exists(remote));
    const QString back = here.filePath("back.txt");
    DialogDriver pickSave("QFileDialog", [&](QWidget* d) { return typeFullPathInFileDialog(d, back); });
    QVERIFY(clickButton(window.get(), "pullButton"));
    QVERIFY2(pickSave.wait(), qPrintable(pickSave.error()));
    QVERIFY(waitUntil([&] { return log->toPlainText().contains("pulled into " + back); }, "the pull"));
    QFile got(back);
    QVERIFY(got.open(QIODevice::ReadOnly));
    QCOMPARE(got.readAll(), QByteArray("grounded answers only\n"));
    QCOMPARE(rowCount(lab.path(), "events", "type = 'transfer'"), qint64(2));

    // Forget the box; its ended life is one click away.
    QVERIFY(clickRow(boxes, rowWith(boxes->model(), {"loop"})));
    DialogDriver sure("QMessageBox", [](QWidget* box) { return answerDefaultNo(box, "Yes", "Forget the box loop"); });
    QVERIFY(clickButton(window.get(), "teardownButton"));
    QVERIFY2(sure.wait(), qPrintable(sure.error()));
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {"loop"}) < 0; }, "the box forgotten"));
    QVERIFY(click(waitFor<QCheckBox>(window.get(), "showEndedCheck")));
    QVERIFY(waitUntil([&] { return rowWith(boxes->model(), {"loop", "removed"}) >= 0; }, "the ended life shown"));
    window.reset();
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
  }
};

QTEST_MAIN(TestJourneyAddABoxAndMoveFiles)
#include "test_journey_add_a_box_and_move_files.moc"
