// The lab store: creation, migration, refusal of newer schemas, cross-process
// reading while writing, SIGKILL mid-transaction, foreign keys, corrupt files.
#include <QCryptographicHash>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/store/lab_store.h"
#include "core/store/schema.h"

using namespace crosslab::store;
namespace fs = std::filesystem;

namespace {

QByteArray fileHash(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
}

std::int64_t metricCount(LabStore& lab) { return lab.db().scalarInt("SELECT count(*) FROM metrics"); }

// Lines the child printed so far, waiting up to `ms` for one that starts with `prefix`.
bool waitForLine(QProcess& p, const QByteArray& prefix, QByteArray* lastLine, int ms = 30000) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) {
    while (p.canReadLine()) {
      const QByteArray line = p.readLine().trimmed();
      if (lastLine) *lastLine = line;
      if (line.startsWith(prefix)) return true;
    }
    if (p.state() == QProcess::NotRunning && !p.canReadLine()) return false;
    p.waitForReadyRead(100);
  }
  return false;
}

}  // namespace

class TestLabStore : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString labPath(const QString& name) { return tmp_.filePath(name); }

 private slots:
  void createsLayoutAndSchema() {
    const QString dir = labPath("fresh");
    auto lab = LabStore::create(dir.toStdString(), "fresh lab");
    QCOMPARE(lab.schemaVersion(), currentSchemaVersion());
    QCOMPARE(QString::fromStdString(lab.db().scalarText("PRAGMA journal_mode")), QString("wal"));
    QCOMPARE(lab.db().scalarInt("PRAGMA foreign_keys"), 1);
    for (const char* sub : {"models", "data", "runs", "reports"}) QVERIFY(fs::is_directory(fs::path(dir.toStdString()) / sub));
    const auto info = lab.info();
    QCOMPARE(QString::fromStdString(info.name), QString("fresh lab"));
    QCOMPARE(info.counts.size(), labTables().size());
    QCOMPARE(info.counts.front().table, std::string("labs"));
    QCOMPARE(info.counts.front().rows, 1);
    QVERIFY(!fs::exists(fs::path(dir.toStdString()) / "lab.sqlite.creating"));
  }

  void createRefusesExistingLab() {
    const QString dir = labPath("twice");
    LabStore::create(dir.toStdString(), "a");
    QVERIFY_THROWS_EXCEPTION(StoreError, LabStore::create(dir.toStdString(), "b"));
    QCOMPARE(QString::fromStdString(LabStore::open(dir.toStdString()).info().name), QString("a"));
  }

  void migratesSchema1Fixture() {
    const QString dir = labPath("old");
    QVERIFY(QDir().mkpath(dir));
    {
      QFile sql(QStringLiteral(CROSSLAB_TESTS_DIR "/fixtures/lab_schema1.sql"));
      QVERIFY(sql.open(QIODevice::ReadOnly));
      Database db((dir + "/lab.sqlite").toStdString(), Database::Mode::ReadWriteCreate);
      db.exec(sql.readAll().toStdString());
      QCOMPARE(db.scalarInt("PRAGMA user_version"), 1);
    }
    auto lab = LabStore::open(dir.toStdString());
    QCOMPARE(lab.schemaVersion(), currentSchemaVersion());
    // Every row written at schema 1 is still there, and the new column/table exist.
    QCOMPARE(metricCount(lab), 3);
    QCOMPARE(lab.db().scalarText("SELECT name FROM runs WHERE id = 1"), std::string("8b-lora"));
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM ledger"), 2);
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM metrics WHERE tokens_per_s IS NULL"), 3);
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM settings"), 0);
    // A copy of the lab as it was is kept beside it.
    const std::string backup = dir.toStdString() + "/lab.sqlite.schema1.bak";
    QVERIFY(fs::exists(backup));
    Database old(backup, Database::Mode::ReadOnly);
    QCOMPARE(old.scalarInt("PRAGMA user_version"), 1);
    QCOMPARE(old.scalarInt("SELECT count(*) FROM metrics"), 3);
  }

  void refusesNewerSchemaUntouched() {
    const QString dir = labPath("newer");
    { LabStore::create(dir.toStdString(), "future"); }
    {
      Database db((dir + "/lab.sqlite").toStdString(), Database::Mode::ReadWrite);
      db.exec("PRAGMA journal_mode = DELETE");  // fold the WAL in so the hash covers everything
      db.exec("PRAGMA user_version = 99");
    }
    const QByteArray before = fileHash(dir + "/lab.sqlite");
    try {
      LabStore::open(dir.toStdString());
      QFAIL("a newer schema was opened");
    } catch (const StoreError& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("newer crosslab") && msg.contains("schema 99"), qPrintable(msg));
    }
    QCOMPARE(fileHash(dir + "/lab.sqlite"), before);
    QVERIFY(!QFile::exists(dir + "/lab.sqlite-wal"));
  }

  void foreignKeysEnforced() {
    auto lab = LabStore::create(labPath("fk").toStdString(), "fk");
    MetricRow row;
    row.step = 1;
    row.loss = 0.5;
    QVERIFY_THROWS_EXCEPTION(StoreError, lab.runs().appendMetrics(4242, {row}));
    QCOMPARE(metricCount(lab), 0);
    const auto run = lab.runs().requestCreate([] { crosslab::store::NewRun r; r.name = "r"; return r; }());
    lab.runs().appendMetrics(run, {row});
    lab.addEvent(run, std::nullopt, "start", "started");
    QVERIFY_THROWS_EXCEPTION(StoreError, lab.db().exec("INSERT INTO boxes(venue_id, name) VALUES (77, 'x')"));
    lab.db().exec("DELETE FROM runs WHERE id = " + std::to_string(run));
    QCOMPARE(metricCount(lab), 0);  // cascades
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM events"), 0);
  }

  void corruptFileIsClearErrorAndUntouched() {
    const QString dir = labPath("corrupt");
    QVERIFY(QDir().mkpath(dir));
    QByteArray junk(64 * 1024, '\0');
    for (auto& c : junk) c = static_cast<char>(QRandomGenerator::global()->bounded(256));
    {
      QFile f(dir + "/lab.sqlite");
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(junk);
    }
    try {
      LabStore::open(dir.toStdString());
      QFAIL("random bytes opened as a lab");
    } catch (const StoreError& e) {
      const QString msg = e.what();
      QVERIFY2(msg.contains("not a readable crosslab lab database") && msg.contains("lab.sqlite"), qPrintable(msg));
    }
    QFile f(dir + "/lab.sqlite");
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), junk);
  }

  void nonLabFolderRefused() {
    QVERIFY(QDir().mkpath(labPath("plain")));
    try {
      LabStore::open(labPath("plain").toStdString());
      QFAIL("a plain folder opened as a lab");
    } catch (const StoreError& e) {
      QVERIFY(QString(e.what()).contains("no lab.sqlite"));
    }
    QVERIFY(!QFile::exists(labPath("plain") + "/lab.sqlite"));  // nothing created
  }

  // A reader in this process while another process commits: every read sees whole
  // transactions (a multiple of the batch), counts never go back, and no read fails busy.
  void readerWhileOtherProcessWrites() {
    const QString dir = labPath("concurrent");
    { LabStore::create(dir.toStdString(), "c"); }
    const int txns = 300, batch = 7;
    QProcess writer;
    writer.start(STORE_WRITER, {dir, QString::number(txns), QString::number(batch)});
    QVERIFY(writer.waitForStarted());
    auto lab = LabStore::open(dir.toStdString());
    std::int64_t last = 0;
    int reads = 0;
    while (writer.state() != QProcess::NotRunning) {
      const auto n = metricCount(lab);
      QVERIFY2(n % batch == 0, "a reader saw half a transaction");
      QVERIFY(n >= last);
      last = n;
      ++reads;
      writer.waitForFinished(1);
    }
    QCOMPARE(writer.exitCode(), 0);
    QVERIFY(reads > 1);
    QCOMPARE(metricCount(lab), txns * batch);
  }

  // Killed inside an open transaction: the database is consistent, every committed row is
  // there, and the uncommitted batch is not.
  void sigkillInsideTransaction() {
    const QString dir = labPath("killed");
    { LabStore::create(dir.toStdString(), "k"); }
    const int batch = 50, stallAt = 25;
    QProcess writer;
    writer.start(STORE_WRITER, {dir, "100", QString::number(batch), "--stall-in-txn", QString::number(stallAt)});
    QByteArray line;
    QVERIFY(waitForLine(writer, "in-transaction", &line));
    ::kill(static_cast<pid_t>(writer.processId()), SIGKILL);
    QVERIFY(writer.waitForFinished(10000));
    QCOMPARE(writer.exitStatus(), QProcess::CrashExit);

    auto lab = LabStore::open(dir.toStdString());
    QCOMPARE(QString::fromStdString(lab.db().scalarText("PRAGMA integrity_check")), QString("ok"));
    QCOMPARE(metricCount(lab), stallAt * batch);
    QCOMPARE(lab.db().scalarInt("SELECT count(*) FROM pragma_foreign_key_check"), 0);
  }

  // Killed at arbitrary moments while committing at full speed, several times over the
  // same lab: each time at least every acknowledged commit survives, and never half of one.
  void sigkillAtRandomMoments() {
    const QString dir = labPath("killed-random");
    { LabStore::create(dir.toStdString(), "kr"); }
    const int batch = 20;
    std::int64_t expectedAtLeast = 0;
    for (int round = 0; round < 5; ++round) {
      QProcess writer;
      writer.start(STORE_WRITER, {dir, "100000", QString::number(batch)});
      QByteArray line;
      QVERIFY(waitForLine(writer, "committed", &line));
      // Let it run a little, reading acknowledgements, then kill without warning.
      const int extra = QRandomGenerator::global()->bounded(1, 40);
      int acked = line.split(' ').last().toInt();
      for (int i = 0; i < extra && waitForLine(writer, "committed", &line, 5000); ++i) acked = line.split(' ').last().toInt();
      ::kill(static_cast<pid_t>(writer.processId()), SIGKILL);
      QVERIFY(writer.waitForFinished(10000));
      // Acknowledged lines that were still in the pipe count too.
      const QList<QByteArray> rest = writer.readAllStandardOutput().split('\n');
      for (const auto& l : rest)
        if (l.startsWith("committed")) acked = l.split(' ').last().toInt();

      auto lab = LabStore::open(dir.toStdString());
      QCOMPARE(QString::fromStdString(lab.db().scalarText("PRAGMA integrity_check")), QString("ok"));
      const auto runId = lab.db().scalarInt("SELECT max(id) FROM runs");
      const auto rows = lab.db().scalarInt("SELECT count(*) FROM metrics WHERE run_id = " + std::to_string(runId));
      QVERIFY2(rows % batch == 0, "half a transaction survived");
      QVERIFY2(rows >= static_cast<std::int64_t>(acked) * batch, "an acknowledged commit was lost");
      expectedAtLeast += rows;
      QCOMPARE(metricCount(lab), expectedAtLeast);
    }
  }
};

QTEST_GUILESS_MAIN(TestLabStore)
#include "test_lab_store.moc"
