// The New Run dialog offscreen, driven by keys and clicks on its widgets: it proposes the
// lab's own base models and training sets (not its eval sets) and the last choice; a
// name the lab already has, a model folder that is no complete checkpoint and training
// data that cannot be read keep Start disabled with the reason shown; an earlier run's
// recipe is reused in one click; a box needs its preflight before Start.
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QDoubleSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "core/venues/venue_store.h"
#include "tests/model/tiny_llama.h"
#include "tests/train/tiny_tokenizer.h"
#include "widgets/new_run_dialog.h"

using namespace crosslab;

class TestNewRunDialog : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int n_ = 0;

  void writeText(const QString& path, const QByteArray& text) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
  }

  // A lab with one base model (models/tiny), a training set and an eval set in data/.
  std::unique_ptr<backends::LabSession> labWithInputs() {
    const QString dir = tmp_.filePath(QString("lab%1").arg(++n_));
    auto session = std::make_unique<backends::LabSession>();
    QString error;
    if (!session->requestCreate(dir, "t", &error)) qFatal("%s", qPrintable(error));
    const QString model = dir + "/models/tiny";
    QDir().mkpath(model);
    testing::writeTinyLlama(model.toStdString(), {});
    testing::writeTinyTokenizer(model.toStdString());
    QJsonArray train;
    for (int i = 0; i < 8; ++i)
      train.append(QJsonObject{{"instruction", QString("q%1").arg(i)}, {"input", ""}, {"output", QString("a%1").arg(i)}});
    writeText(dir + "/data/train.json", QJsonDocument(train).toJson());
    writeText(dir + "/data/eval.jsonl", R"({"id": "q1", "question": "?", "contexts": ["c"]})" "\n");
    return session;
  }

  static QPushButton* startButton(widgets::NewRunDialog& d) { return d.findChild<QPushButton*>("startButton"); }
  static QString problemsShown(widgets::NewRunDialog& d) { return d.findChild<QLabel*>("problems")->text(); }

  // Replaces a line edit's text as a user does: select all, type.
  static void type(QLineEdit* e, const QString& text) {
    e->setFocus();
    QTest::keyClick(e, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(e, text);
  }

 private slots:
  void proposesTheLabsModelsAndTrainingSets() {
    auto session = labWithInputs();
    widgets::NewRunDialog d(session.get());
    auto* model = d.findChild<QComboBox*>("field_model_name_or_path");
    auto* data = d.findChild<QComboBox*>("field_dataset_file");
    QCOMPARE(model->count(), 1);
    QCOMPARE(model->currentText(), QString("models/tiny"));
    QCOMPARE(data->count(), 1);  // the eval set is not a training set
    QCOMPARE(data->currentText(), QString("data/train.json"));
    QVERIFY2(d.problems().isEmpty(), qPrintable(d.problems().join("; ")));
    QVERIFY(startButton(d)->isEnabled());
    QCOMPARE(QString::fromStdString(d.recipe().modelPath), session->path() + "/models/tiny");
    QCOMPARE(QString::fromStdString(d.recipe().outputDir), session->path() + "/runs/" + d.runName());
    QVERIFY(d.findChild<QPlainTextEdit*>("commandPreview")->toPlainText().contains("train --recipe " + session->path() + "/runs/"));
  }

  void aNameTheLabHasIsRefused() {
    auto session = labWithInputs();
    store::NewRun r;
    r.name = "lora-a";
    session->store()->runs().requestCreate(r);
    QDir().mkpath(session->path() + "/runs/leftover");
    widgets::NewRunDialog d(session.get());
    auto* name = d.findChild<QLineEdit*>("runName");
    type(name, "lora-a");
    QVERIFY2(problemsShown(d).contains("already has a run named 'lora-a'"), qPrintable(problemsShown(d)));
    QVERIFY(!startButton(d)->isEnabled());
    type(name, "leftover");  // a folder without a row is no less taken
    QVERIFY2(problemsShown(d).contains("runs/leftover already exists"), qPrintable(problemsShown(d)));
    QVERIFY(!startButton(d)->isEnabled());
    type(name, "lora-b");
    QVERIFY2(problemsShown(d).isEmpty(), qPrintable(problemsShown(d)));
    QVERIFY(startButton(d)->isEnabled());
  }

  void incompleteModelOrUnreadableDataIsRefused() {
    auto session = labWithInputs();
    const QString broken = session->path() + "/models/broken";
    QDir().mkpath(broken);
    QFile::copy(session->path() + "/models/tiny/config.json", broken + "/config.json");
    QFile::copy(session->path() + "/models/tiny/tokenizer.json", broken + "/tokenizer.json");
    writeText(session->path() + "/junk.json", "{ not json");
    widgets::NewRunDialog d(session.get());
    auto* model = d.findChild<QComboBox*>("field_model_name_or_path");
    type(model->lineEdit(), broken);
    QVERIFY2(problemsShown(d).contains("base model: no model.safetensors"), qPrintable(problemsShown(d)));
    QVERIFY(!startButton(d)->isEnabled());
    type(model->lineEdit(), session->path() + "/models/missing");
    QVERIFY2(problemsShown(d).contains("does not exist"), qPrintable(problemsShown(d)));
    type(model->lineEdit(), "models/tiny");  // relative to the lab
    auto* data = d.findChild<QComboBox*>("field_dataset_file");
    type(data->lineEdit(), session->path() + "/junk.json");
    QVERIFY2(problemsShown(d).contains("training data"), qPrintable(problemsShown(d)));
    QVERIFY(!startButton(d)->isEnabled());
    type(data->lineEdit(), "data/train.json");
    QVERIFY2(problemsShown(d).isEmpty(), qPrintable(problemsShown(d)));
  }

  // "Start from" lists earlier runs' recipes: one choice fills the form.
  void earlierRecipeIsReusedInOneClick() {
    auto session = labWithInputs();
    train::Recipe old = train::Recipe::labDefaults();
    old.loraRank = 8;
    old.loraAlpha = 24;
    old.learningRate = 2e-5;
    old.lrSchedulerType = "cosine";
    store::NewRun r;
    r.name = "earlier";
    r.recipeJson = train::recipeToJson(old);
    session->store()->runs().requestCreate(r);
    widgets::NewRunDialog d(session.get());
    auto* source = d.findChild<QComboBox*>("recipeSource");
    QCOMPARE(source->itemText(source->count() - 1), QString("Recipe of earlier (pending)"));
    auto* rank = d.findChild<QSpinBox*>("field_lora_rank");
    QCOMPARE(rank->value(), 16);
    source->setFocus();
    while (source->currentIndex() != source->count() - 1) QTest::keyClick(source, Qt::Key_Down);
    QCOMPARE(rank->value(), 8);
    QCOMPARE(d.findChild<QSpinBox*>("field_lora_alpha")->value(), 24);
    QCOMPARE(d.findChild<QComboBox*>("field_lr_scheduler_type")->currentText(), QString("cosine"));
    QCOMPARE(d.recipe().learningRate, 2e-5);
    QCOMPARE(d.findChild<QComboBox*>("field_model_name_or_path")->currentText(), QString("models/tiny"));  // paths kept
  }

  void lastChoiceIsProposed() {
    auto session = labWithInputs();
    train::Recipe r = train::Recipe::labDefaults();
    r.loraRank = 4;
    r.modelPath = (session->path() + "/models/tiny").toStdString();
    const QJsonObject last{{"recipe", QJsonDocument::fromJson(QByteArray::fromStdString(train::recipeToJson(r))).object()},
                           {"data", session->path() + "/data/train.json"}};
    session->store()->runs().requestLastChoice(QJsonDocument(last).toJson().toStdString());
    widgets::NewRunDialog d(session.get());
    QCOMPARE(d.findChild<QComboBox*>("recipeSource")->currentText(), QString("Last choice"));
    QCOMPARE(d.findChild<QSpinBox*>("field_lora_rank")->value(), 4);
    QCOMPARE(d.findChild<QComboBox*>("field_dataset_file")->currentText(), QString("data/train.json"));
  }

  // A box of the lab is a place to train; Start waits for its preflight.
  void aBoxNeedsItsPreflight() {
    auto session = labWithInputs();
    venues::VenueStore venues(*session->store());
    venues::BoxRow b;
    b.venueId = venues.ensureVenue("loop", "ssh");
    b.name = "loop";
    b.host = "127.0.0.1";
    b.port = 1;  // nothing listens: the preflight says so
    b.user = "nobody";
    b.pricePerHour = 2.99;
    venues.addBox(b);
    widgets::NewRunDialog d(session.get());
    auto* where = d.findChild<QComboBox*>("where");
    QCOMPARE(where->count(), 2);
    QVERIFY(where->itemText(1).startsWith("loop"));
    QVERIFY(where->itemText(1).contains("$2.99/h"));
    where->setFocus();
    QTest::keyClick(where, Qt::Key_Down);
    QCOMPARE(where->currentIndex(), 1);
    QVERIFY(d.findChild<QComboBox*>("engine")->isEnabled());
    QVERIFY2(problemsShown(d).contains("check the box first"), qPrintable(problemsShown(d)));
    QVERIFY(!startButton(d)->isEnabled());
    QTest::mouseClick(d.findChild<QPushButton*>("preflightButton"), Qt::LeftButton);
    auto* report = d.findChild<QPlainTextEdit*>("preflightReport");
    QTRY_VERIFY_WITH_TIMEOUT(report->toPlainText().contains("cannot check loop"), 60000);
    QVERIFY(!startButton(d)->isEnabled());
  }
};

QTEST_MAIN(TestNewRunDialog)
#include "test_new_run_dialog.moc"
