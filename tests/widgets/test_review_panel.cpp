// The Review panel: the item model headless (filters, verdicts saved and undone, blind
// shuffling) and the panel offscreen (keys move and record verdicts, undo, blind mode hides
// names, highlights sit at the right offsets with the right colours).
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

#include "backends/lab_session.h"
#include "core/eval/eval_store.h"
#include "core/store/lab_store.h"
#include "widgets/review_model.h"
#include "widgets/review_panel.h"

using namespace crosslab;
using nlohmann::json;
using widgets::ReviewModel;

namespace {

const std::string kCtx0 = "Caf\u00e9 owners in Z\u00fcrich reported that the \u201cespresso machine\u201d failed every Tuesday.";
const std::string kCtx1 = "the committee approved the new budget for the regional hospital after a long debate";

std::string out(const std::string& answer, std::vector<std::string> quotes) {
  return json{{"answer", answer}, {"evidence", quotes}}.dump();
}

void write(const QString& path, const std::string& text) { std::ofstream(path.toStdString(), std::ios::binary) << text; }

std::string line(const json& j) { return j.dump() + "\n"; }

qint64 count(store::LabStore& lab, const std::string& instrument) {
  auto s = lab.db().prepare("SELECT count(*) FROM verdicts WHERE instrument = ?1");
  s.bind(1, instrument);
  s.step();
  return s.int64(0);
}

}  // namespace

class TestReviewPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString lab_, eval_, outputs_;

 private slots:
  void initTestCase() {
    lab_ = tmp_.filePath("lab");
    store::LabStore::create(lab_.toStdString(), "review");
    eval_ = tmp_.filePath("eval.jsonl");
    outputs_ = tmp_.filePath("outputs.jsonl");
    write(eval_, line({{"id", "q1"}, {"question", "What failed?"}, {"contexts", {kCtx0, kCtx1}}}) +
                     line({{"id", "q2"}, {"question", "What was approved?"}, {"contexts", {kCtx1}}}) +
                     line({{"id", "q3"}, {"question", "Same?"}, {"contexts", {kCtx1}}}));
    const std::string same = out("a budget", {"the new budget"});
    write(outputs_,
          line({{"id", "q1"}, {"model", "alpha"},
                {"output", out("the machine", {"Z\u00fcrich reported that the \"espresso machine\"", "a made up sentence that is not there"})}}) +
              line({{"id", "q1"}, {"model", "beta"}, {"output", out("the machine", {"espresso machine"})}}) +
              line({{"id", "q2"}, {"model", "alpha"},
                    {"output", out("budget", {"the committee approved the new budget for the regional hospital after a long discussion"})}}) +
              line({{"id", "q2"}, {"model", "beta"}, {"output", "not json at all"}}) +
              line({{"id", "q3"}, {"model", "alpha"}, {"output", same}}) + line({{"id", "q3"}, {"model", "beta"}, {"output", same}}));
  }

  void modelFiltersAndUndo() {
    auto lab = store::LabStore::create(tmp_.filePath("lab-model").toStdString(), "m");
    eval::EvalStore es(lab);
    auto set = eval::loadEvalSet(eval_.toStdString());
    auto outputs = eval::loadOutputs(outputs_.toStdString());
    auto ids = es.importOutputs(set.sha256, outputs, "test");
    ReviewModel model;
    model.setStore(&es);
    model.setSnapshot(widgets::makeReviewSnapshot(set, outputs, ids));
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 3);
    QCOMPARE(model.data(model.index(0, 1), Qt::UserRole).toString(), QString("format strict, quotes fabricated, gate none, human none"));
    QCOMPARE(model.data(model.index(1, 1), Qt::UserRole).toString(), QString("format strict, quotes fuzzy, gate none, human none"));
    model.setFilter(ReviewModel::FabricatedOnly);
    QCOMPARE(model.rowCount(), 1);
    model.setFilter(ReviewModel::DifferentOnly);
    QCOMPARE(model.rowCount(), 2);  // q3's outputs are identical
    model.setFilter(ReviewModel::All);

    QVERIFY(model.requestSampleVerdict(ReviewModel::A, true));
    QVERIFY(model.requestSampleVerdict(ReviewModel::A, false));
    QCOMPARE(count(lab, "human"), 2);
    QCOMPARE(model.verdictOf(model.sampleIndex(ReviewModel::A), "human"), QString("reject"));
    model.setFilter(ReviewModel::InstrumentsDisagree);  // q1: format accepts, quotes and human reject
    QCOMPARE(model.questionAt(0), 0);
    model.setFilter(ReviewModel::All);
    QVERIFY(model.requestUndo());
    QCOMPARE(count(lab, "human"), 1);
    QCOMPARE(model.verdictOf(model.sampleIndex(ReviewModel::A), "human"), QString("accept"));  // previous shows again
    QVERIFY(model.requestUndo());
    QCOMPARE(model.verdictOf(model.sampleIndex(ReviewModel::A), "human"), QString());
    QVERIFY(!model.requestUndo());
  }

  void blindModeShufflesPerQuestionUntilVerdict() {
    auto set = eval::loadEvalSet(eval_.toStdString());
    auto outputs = eval::loadOutputs(outputs_.toStdString());
    ReviewModel model;
    model.setSnapshot(widgets::makeReviewSnapshot(set, outputs, {1, 2, 3, 4, 5, 6}));
    quint32 seed = 0;
    for (; seed < 64; ++seed) {
      model.setBlind(true, seed);
      if (model.swapped(0) != model.swapped(1)) break;  // one question swapped, the other not
    }
    QVERIFY(seed < 64);
    QCOMPARE(model.sideLabel(ReviewModel::A), QString("A"));
    QCOMPARE(model.headerData(1, Qt::Horizontal, Qt::DisplayRole).toString(), QString("model 1"));
    const QString onA = model.sideModel(ReviewModel::A);
    QVERIFY(model.requestPairVerdict(ReviewModel::A));  // memory only (no store)
    QCOMPARE(model.sideLabel(ReviewModel::A), onA);     // revealed after the verdict
    QCOMPARE(model.pairVerdict(0), QString("A"));
    model.setBlind(false, 0);
    QCOMPARE(model.sideModel(ReviewModel::A), QString("alpha"));
    QCOMPARE(model.pairVerdict(0), onA == "alpha" ? QString("A") : QString("B"));
  }

  void panelKeysHighlightsAndBlind() {
    backends::LabSession session;
    QString error;
    QVERIFY2(session.requestOpen(lab_, &error), qPrintable(error));
    widgets::ReviewPanel panel(&session);
    panel.resize(1200, 800);
    panel.show();
    QSignalSpy loaded(&panel, &widgets::ReviewPanel::loaded);
    panel.loadEval(eval_, outputs_);
    QVERIFY(loaded.wait(20000));
    QCOMPARE(loaded.at(0).at(0).toBool(), true);
    auto* model = panel.model();
    QCOMPARE(model->currentQuestion(), 0);
    auto* table = panel.instrumentsTable();
    QCOMPARE(table->rowCount(), 2);  // alpha, beta
    QCOMPARE(table->columnCount(), 10);  // breakdown (7), format, quotes, human
    QCOMPARE(table->horizontalHeaderItem(7)->text(), QString("format accepted"));
    QCOMPARE(table->horizontalHeaderItem(9)->text(), QString("human"));
    QCOMPARE(table->item(0, 0)->text(), QString("3/3"));  // alpha: JSON strict
    QCOMPARE(table->item(1, 2)->text(), QString("1/3"));  // beta: q2 is not JSON
    QCOMPARE(table->item(0, 5)->text(), QString("1/4"));  // alpha: one fabricated of four quotes

    // Highlights: alpha's exact quote sits at "Zürich … “espresso machine”" in context 1 (green).
    const auto marks = panel.contextsView()->extraSelections();
    QVERIFY(!marks.isEmpty());
    QCOMPARE(marks[0].cursor.selectedText(), QString::fromUtf8("Zürich reported that the “espresso machine”"));
    QCOMPARE(marks[0].format.background().color(), QColor(0xb7, 0xeb, 0xc0));
    const auto outMarks = panel.outputView(0)->extraSelections();
    QCOMPARE(outMarks.size(), 2);
    QCOMPARE(outMarks[1].cursor.selectedText(), QString("a made up sentence that is not there"));
    QCOMPARE(outMarks[1].format.background().color(), QColor(0xf6, 0xb0, 0xa8));  // fabricated: red
    QVERIFY(panel.jumpToQuote(1, 0));  // beta's "espresso machine"
    QCOMPARE(panel.contextsView()->textCursor().selectedText(), QString("espresso machine"));
    QVERIFY(!panel.jumpToQuote(0, 1));  // a fabricated quote has no place in the context

    // Keys: j/k move; 1 records A better; u undoes it; a/r record per side.
    QWidget* focus = panel.contextsView();
    QTest::keyClick(focus, Qt::Key_J);
    QCOMPARE(model->currentQuestion(), 1);
    const auto fuzzy = panel.contextsView()->extraSelections();
    QCOMPARE(fuzzy.size(), 1);
    QCOMPARE(fuzzy[0].format.background().color(), QColor(0xff, 0xdf, 0x8a));  // fuzzy: amber
    QTest::keyClick(focus, Qt::Key_K);
    QCOMPARE(model->currentQuestion(), 0);
    QTest::keyClick(focus, Qt::Key_1);
    QCOMPARE(count(*session.store(), "human:pair"), 1);
    QVERIFY(panel.sideTitle(0)->text().contains("better"));
    QTest::keyClick(focus, Qt::Key_U);
    QCOMPARE(count(*session.store(), "human:pair"), 0);
    QTest::keyClick(focus, Qt::Key_A);
    QCOMPARE(panel.currentSide(), 1);
    QTest::keyClick(focus, Qt::Key_R);
    QCOMPARE(count(*session.store(), "human"), 2);
    QCOMPARE(model->verdictOf(model->sampleIndex(ReviewModel::B), "human"), QString("reject"));

    // c opens the comment line; Enter saves it on the current side.
    QTest::keyClick(focus, Qt::Key_C);
    QVERIFY(panel.commentEdit()->isVisible());
    QTest::keyClicks(panel.commentEdit(), "quotes fine");
    QTest::keyClick(panel.commentEdit(), Qt::Key_Return);
    QCOMPARE(count(*session.store(), "human:comment"), 1);
    QVERIFY(!panel.commentEdit()->isVisible());

    // Blind mode: no model name anywhere on the sides until a verdict; parity reveals.
    QTest::keyClick(focus, Qt::Key_J);
    panel.findChild<QCheckBox*>()->setChecked(true);
    for (int side = 0; side < 2; ++side) {
      QVERIFY(!panel.sideTitle(side)->text().contains("alpha"));
      QVERIFY(!panel.sideTitle(side)->text().contains("beta"));
    }
    QTest::keyClick(focus, Qt::Key_Equal);
    QVERIFY(panel.sideTitle(0)->text().contains("alpha") || panel.sideTitle(0)->text().contains("beta"));
    QVERIFY(panel.sideTitle(0)->text().contains("parity"));

    // Reopening the lab reloads the eval set it was last reviewed with.
    QVERIFY(session.requestOpen(lab_, &error));
    QVERIFY(loaded.wait(20000));
    QCOMPARE(model->rowCount(), 3);

    // Another lab: the old samples go, and no key writes their verdicts into the new lab.
    const QString other = tmp_.filePath("lab-other");
    store::LabStore::create(other.toStdString(), "other");
    QVERIFY(session.requestOpen(other, &error));
    QCOMPARE(model->rowCount(), 0);
    QTest::keyClick(focus, Qt::Key_1);
    QTest::keyClick(focus, Qt::Key_A);
    QCOMPARE(session.store()->db().scalarInt("SELECT count(*) FROM verdicts"), 0);
  }
};

QTEST_MAIN(TestReviewPanel)
#include "test_review_panel.moc"
