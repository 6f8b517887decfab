// Journey: a user opens the demo lab, goes to Review, reads the instruments table, judges
// demo-base against demo-lora, imports a third model's outputs through Import Outputs…,
// compares against that third model, then starts a new lab. Driven through the real
// window (mouse on the sidebar and buttons, keys on the question list and the combo boxes,
// the real file and input dialogs) on a demo lab built by the real `crosslab-cli demo`.
// Checks what the user sees (table cells, side titles, quote notes, combo contents) and
// what the lab holds afterwards (integrity_check, the verdict rows and the pair each
// judged). Issue 11 items 3 (verdicts against the right pair), 4 (every instrument from
// the first moment; nothing stale after New Lab), 6 (Review at 1024×700), 9 (what
// "exact" allows).
#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QTableWidget>
#include <QTreeView>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>

#include "backends/lab_session.h"
#include "tests/journeys/journey_support.h"
#include "widgets/main_window.h"
#include "widgets/review_panel.h"

using namespace crosslab;
using namespace crosslab::journey;
using nlohmann::json;

namespace {

int column(QTableWidget* t, const QString& header) {
  for (int c = 0; c < t->columnCount(); ++c)
    if (t->horizontalHeaderItem(c)->text() == header) return c;
  return -1;
}

int row(QTableWidget* t, const QString& model) {
  for (int r = 0; r < t->rowCount(); ++r)
    if (t->verticalHeaderItem(r)->text() == model) return r;
  return -1;
}

QString cell(QTableWidget* t, const QString& model, const QString& header) {
  const int r = row(t, model), c = column(t, header);
  return r < 0 || c < 0 || !t->item(r, c) ? QString("<missing %1/%2>").arg(model, header) : t->item(r, c)->text();
}

// A third model's outputs: the eval set's reference answers, with the first question's
// quotes lower-cased and their final period stripped (letter case differs: fuzzy, not
// exact), the second question's quote invented (fabricated), everything else verbatim.
// Returns the counts built in: {samples, exact, fuzzy, fabricated}.
json writeThirdModel(const QString& evalPath, const QString& outPath) {
  std::ifstream in(evalPath.toStdString());
  std::ofstream out(outPath.toStdString());
  int exact = 0, fuzzy = 0, fabricated = 0, n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const json q = json::parse(line);
    json answer = json::parse(q["reference"].get<std::string>());
    if (n == 0) {
      for (auto& e : answer["evidence"]) {
        std::string s = e.get<std::string>();
        for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (!s.empty() && s.back() == '.') s.pop_back();
        e = s;
        ++fuzzy;
      }
    } else if (n == 1) {
      answer["evidence"] = {"the quarterly audit found nothing wrong with any of the boxes"};
      ++fabricated;
    } else {
      exact += static_cast<int>(answer["evidence"].size());
    }
    out << json{{"id", q["id"]}, {"model", "demo-third"}, {"output", answer.dump()}}.dump() << "\n";
    ++n;
  }
  return {{"samples", n}, {"exact", exact}, {"fuzzy", fuzzy}, {"fabricated", fabricated}};
}

// Every model's row of the instruments table is whole on screen: none cut in half, none
// scrolled away.
bool rowsWhole(QTableWidget* t) {
  for (int r = 0; r < t->rowCount(); ++r) {
    const int top = t->verticalHeader()->sectionViewportPosition(r);
    if (top < 0 || top + t->verticalHeader()->sectionSize(r) > t->viewport()->height()) return false;
  }
  return t->rowCount() > 0;
}

QString rowsOnScreen(QTableWidget* t) {
  return QString("%1 rows of %2 px in a viewport of %3 px")
      .arg(t->rowCount())
      .arg(t->rowCount() ? t->verticalHeader()->sectionSize(0) : 0)
      .arg(t->viewport()->height());
}

bool pressKey(QWidget* w, Qt::Key key) {
  w->setFocus();
  QTest::keyClick(w, key);
  return true;
}

}  // namespace

class TestJourneyCompareModelsInReview : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { initJourneyProgram(); }

  void judgeComparePairsAndStartANewLab() {
    DemoLab lab;
    QVERIFY(lab.ok());
    const QString third = lab.file("third.jsonl");
    const json built = writeThirdModel(lab.file("data/demo_eval.jsonl"), third);
    const int n = built["samples"].get<int>();
    QVERIFY(n > 2);

    auto window = std::make_unique<widgets::MainWindow>();
    QVERIFY(showAt(window.get(), 1024, 700));
    QVERIFY(openLabFromMenu(window.get(), lab.path()));
    QVERIFY(showPanel(window.get(), "Review"));
    auto* panel = waitFor<widgets::ReviewPanel>(window.get(), "reviewPanel");
    auto* table = waitFor<QTableWidget>(window.get(), "reviewInstruments");
    QVERIFY(panel && table);

    // From the first moment: both demo models with every instrument, though the demo lab
    // stored no format/quotes verdicts.
    QVERIFY(waitUntil([&] { return table->rowCount() == 2; }, "the instruments table to list the two demo models"));
    QCOMPARE(rowCount(lab.path(), "verdicts"), qint64(0));
    const QStringList expectedColumns{"JSON strict", "fenced",         "invalid",         "quotes exact", "fuzzy",
                                      "fabricated",  "fidelity",       "format accepted", "quotes accepted", "human"};
    QStringList headers;
    for (int c = 0; c < table->columnCount(); ++c) headers << table->horizontalHeaderItem(c)->text();
    QCOMPARE(headers, expectedColumns);
    // The cells agree with the CLI's own check of the same outputs (a separate process).
    const QString exported = lab.file("demo-outputs.jsonl");
    {
      const auto e = runCliBesideWindow({"eval", "export", "--lab", lab.path(), "--format", "json"});
      QCOMPARE(e.code, 0);
      std::ofstream o(exported.toStdString());
      for (const auto& s : json::parse(e.out.toStdString()))
        o << json{{"id", s["id"]}, {"model", s["model"]}, {"output", s["output"]}}.dump() << "\n";
    }
    const auto check = runCliBesideWindow({"eval", "check", "--eval", lab.file("data/demo_eval.jsonl"), "--outputs", exported, "--json"});
    QCOMPARE(check.code, 0);
    const json models = json::parse(check.out.toStdString())["models"];
    for (const char* m : {"demo-base", "demo-lora"}) {
      const json& s = models[m];
      const QString of = QString("/%1").arg(s["samples"].get<int>());
      QCOMPARE(cell(table, m, "JSON strict"), QString::number(s["json_valid"].get<int>()) + of);
      QCOMPARE(cell(table, m, "fenced"), QString::number(s["json_fenced"].get<int>()) + of);
      QCOMPARE(cell(table, m, "human"), QString("–"));
      QVERIFY2(cell(table, m, "format accepted").contains("%"), qPrintable(cell(table, m, "format accepted")));
    }
    QVERIFY(waitUntil([&] { return rowsWhole(table); }, "both models' rows whole at 1024x700 (" + rowsOnScreen(table) + ")"));
    auto* agreement = panel->agreementLabel();
    QVERIFY2(agreement->text().startsWith("format accepted vs quotes accepted: κ"), qPrintable(agreement->text()));

    // Judge demo-base vs demo-lora on the first question: "1" = A better.
    auto* questions = panel->questionList();
    QCOMPARE(panel->modelCombo(0)->currentText(), QString("demo-base"));
    QCOMPARE(panel->modelCombo(1)->currentText(), QString("demo-lora"));
    pressKey(questions, Qt::Key_1);
    QVERIFY(waitUntil([&] { return panel->sideTitle(0)->text().contains("better"); }, "A to read 'better'"));

    // Import the third model through the button and the real file dialog.
    DialogDriver import("QFileDialog", [&](QWidget* d) { return typePathInFileDialog(d, third); });
    QVERIFY(clickButton(window.get(), "importOutputsButton"));
    QVERIFY2(import.wait(), qPrintable(import.error()));
    QVERIFY(waitUntil([&] { return table->rowCount() == 3; }, "the instruments table to list the third model"));
    QCOMPARE(panel->modelCombo(1)->count(), 3);
    const int quotes = built["exact"].get<int>() + built["fuzzy"].get<int>() + built["fabricated"].get<int>();
    QCOMPARE(cell(table, "demo-third", "JSON strict"), QString("%1/%1").arg(n));
    QCOMPARE(cell(table, "demo-third", "quotes exact"), QString("%1/%2").arg(built["exact"].get<int>()).arg(quotes));
    QCOMPARE(cell(table, "demo-third", "fuzzy"), QString("%1/%2").arg(built["fuzzy"].get<int>()).arg(quotes));
    QCOMPARE(cell(table, "demo-third", "fabricated"), QString("%1/%2").arg(built["fabricated"].get<int>()).arg(quotes));
    QVERIFY(waitUntil([&] { return rowsWhole(table); }, "the three models' rows whole at 1024x700 (" + rowsOnScreen(table) + ")"));

    // Compare demo-base with the third model: the verdict given on demo-lora is not this pair's.
    QVERIFY(chooseInCombo(panel->modelCombo(1), "demo-third"));
    QVERIFY(waitUntil([&] { return panel->model()->compared(1) == "demo-third"; }, "B to be demo-third"));
    for (int side = 0; side < 2; ++side) {
      QVERIFY2(!panel->sideTitle(side)->text().contains("better"), qPrintable(panel->sideTitle(side)->text()));
      QVERIFY2(!panel->sideTitle(side)->text().contains("parity"), qPrintable(panel->sideTitle(side)->text()));
    }
    // The lower-cased quote is fuzzy and says why; the rule is on screen.
    auto* quotesB = panel->quoteList(1);
    QVERIFY(quotesB->count() > 0);
    QVERIFY2(quotesB->item(0)->text().startsWith("fuzzy (letter case)"), qPrintable(quotesB->item(0)->text()));
    QVERIFY(waitFor<QLabel>(window.get(), "reviewHint")->text().contains("letter case must match"));
    // Parity on this pair, then back to demo-lora: that pair still reads "better".
    pressKey(questions, Qt::Key_Equal);
    QVERIFY(waitUntil([&] { return panel->sideTitle(0)->text().contains("parity"); }, "A to read 'parity'"));
    QVERIFY(chooseInCombo(panel->modelCombo(1), "demo-lora"));
    QVERIFY(waitUntil([&] { return panel->model()->compared(1) == "demo-lora"; }, "B to be demo-lora again"));
    QVERIFY2(panel->sideTitle(0)->text().contains("better"), qPrintable(panel->sideTitle(0)->text()));
    QVERIFY(!panel->sideTitle(0)->text().contains("parity"));

    // At 1024×700 the status line and the filter read whole; every model's column shows.
    auto* status = panel->statusLabel();
    QVERIFY2(status->text().startsWith(QString("%1 questions, ").arg(n)), qPrintable(status->text()));
    QVERIFY(status->height() >= status->heightForWidth(status->width()));
    auto* filter = waitFor<QComboBox>(window.get(), "reviewFilter");
    QVERIFY(filter->width() >= filter->sizeHint().width());
    auto* header = questions->header();
    QCOMPARE(header->count(), 4);
    for (int c = 1; c < header->count(); ++c) {
      QVERIFY2(!header->isSectionHidden(c), "a model column is hidden");
      QVERIFY2(header->sectionViewportPosition(c) + header->sectionSize(c) <= questions->viewport()->width(),
               qPrintable(QString("model column %1 is cut off").arg(c)));
    }
    QVERIFY2(header->sectionSize(0) >= 120, qPrintable(QString("question column %1 px").arg(header->sectionSize(0))));
    // At 1920x1080 there is room: every model's header reads its whole name.
    window->resize(1920, 1080);
    const QStringList fullNames{"demo-base", "demo-lora", "demo-third"};
    auto headerNames = [&] {
      QStringList out;
      for (int c = 1; c < header->count(); ++c) out << questions->model()->headerData(c, Qt::Horizontal).toString();
      return out;
    };
    QVERIFY(waitUntil([&] { return headerNames() == fullNames; }, "whole model names at 1920x1080 (" + headerNames().join(", ") + ")"));
    for (int c = 1; c < header->count(); ++c)
      QVERIFY2(header->sectionSize(c) >= header->fontMetrics().horizontalAdvance(fullNames[c - 1]),
               qPrintable(QString("column %1 is %2 px").arg(c).arg(header->sectionSize(c))));
    window->resize(1024, 700);
    QVERIFY(waitUntil([&] { return headerNames() != fullNames; }, "the names folded again at 1024x700"));

    // Lab → New Lab… (the folder dialog, the name dialog): nothing of the demo lab stays.
    const QString fresh = lab.file("fresh-lab");
    QVERIFY(newLabFromMenu(window.get(), fresh));
    QVERIFY(waitUntil([&] { return window->session()->path() == fresh; }, "the new lab to be open"));
    QCOMPARE(table->rowCount(), 0);
    QCOMPARE(table->columnCount(), 0);
    QCOMPARE(panel->modelCombo(0)->count(), 0);
    QCOMPARE(panel->modelCombo(1)->count(), 0);
    QVERIFY(agreement->text().isEmpty());
    QVERIFY(chooseMenu(window.get(), "Lab", "Quit"));
    QVERIFY(waitUntil([&] { return !window->isVisible(); }, "the window to close"));
    window.reset();

    // The lab afterwards: whole, with both pair verdicts, each naming the pair it judged.
    QCOMPARE(integrityCheck(lab.path()), QString("ok"));
    QString error;
    const QStringList pairs = labQuery(lab.path(),
                                       "SELECT x.model || ' vs ' || y.model || ': ' || v.verdict FROM verdicts v "
                                       "JOIN samples x ON x.id = v.sample_id "
                                       "JOIN samples y ON y.id = json_extract(v.detail_json, '$.other') "
                                       "WHERE v.instrument = 'human:pair' ORDER BY v.id",
                                       &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(pairs, (QStringList{"demo-base vs demo-lora: x", "demo-base vs demo-third: tie"}));
    QCOMPARE(rowCount(lab.path(), "samples", "model = 'demo-third'"), qint64(n));
  }
};

QTEST_MAIN(TestJourneyCompareModelsInReview)
#include "test_journey_compare_models_in_review.moc"
