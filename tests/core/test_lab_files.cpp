// The lab's database files belong to SQLite (issue #11, core/util/lab_files.h):
// - a stray open+close in this process drops its SQLite locks — shown here as the mechanism;
// - even then, another process's last close does not delete the -wal/-shm under us
//   (SQLITE_FCNTL_PERSIST_WAL), and the connection notices its lost locks and stops writing;
// - a connection whose -wal or -shm was deleted or replaced refuses to write (LabFilesLost),
//   loses nothing that was committed, and the lab reopens sound;
// - our readers, hashers and writers refuse lab database files instead of opening them.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/eval/eval_data.h"
#include "core/store/lab_store.h"
#include "core/store/run_store.h"
#include "core/train/sft_data.h"
#include "core/util/lab_files.h"
#include "core/util/sha256.h"
#include "core/store/posix_locks.h"

using namespace crosslab;
namespace fs = std::filesystem;

namespace {

// This process's POSIX locks on `path` (/proc/locks); -1 when that cannot be known.
int posixLocksHeld(const std::string& path) {
  const auto locks = store::heldLocks(path);
  return locks ? static_cast<int>(locks->size()) : -1;
}

ino_t inodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// What a content-sniffing file dialog did: open the file read-only, close it.
void openAndClose(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
}

// A query by another process (Python's sqlite3, read-only): the first column of each row.
QStringList otherProcessQuery(const QString& lab, const QString& sql) {
  QProcess p;
  p.start(PYTHON3, {"-c",
                    "import sqlite3,sys\n"
                    "db=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro',uri=True,timeout=60)\n"
                    "for r in db.execute(sys.argv[2]): print(r[0])\n",
                    lab + "/lab.sqlite", sql});
  if (!p.waitForFinished(120000) || p.exitCode() != 0) return {"python3 failed: " + QString::fromUtf8(p.readAllStandardError())};
  return QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
}

// Runs tests/core/store_writer (our store, another process) for `txns` commits.
bool runWriter(const QString& lab, int txns) {
  QProcess p;
  p.start(STORE_WRITER, {lab, QString::number(txns), "1"});
  return p.waitForFinished(120000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

}  // namespace

class TestLabFiles : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int n_ = 0;
  std::string newLab() {
    const std::string dir = tmp_.filePath(QString("lab%1").arg(++n_)).toStdString();
    store::LabStore::create(dir, "t");
    return dir;
  }

 private slots:
  void namesOfTheLabDatabase() {
    for (const char* yes : {"lab.sqlite", "lab.sqlite-wal", "lab.sqlite-shm", "lab.sqlite-journal"})
      QVERIFY2(util::isLabDatabaseFile(fs::path("/some/lab") / yes), yes);
    for (const char* no : {"lab.sqlite.schema1.bak", "lab.sqlite.creating", "outputs.jsonl", "lab.sqlite3", "mylab.sqlite"})
      QVERIFY2(!util::isLabDatabaseFile(fs::path("/some/lab") / no), no);
    const std::string dir = newLab();
    fs::create_symlink(dir + "/lab.sqlite", dir + "/innocent.jsonl");
    QVERIFY(util::isLabDatabaseFile(dir + "/innocent.jsonl"));  // a link is what it points to
  }

  void strayOpenCloseDropsTheLocks() {  // the mechanism, on this platform
    const std::string dir = newLab();
    auto lab = store::LabStore::open(dir);
    QVERIFY(posixLocksHeld(dir + "/lab.sqlite") > 0);
    QVERIFY(posixLocksHeld(dir + "/lab.sqlite-shm") > 0);
    openAndClose(dir + "/lab.sqlite-shm");
    openAndClose(dir + "/lab.sqlite");
    QCOMPARE(posixLocksHeld(dir + "/lab.sqlite"), 0);
    QCOMPARE(posixLocksHeld(dir + "/lab.sqlite-shm"), 0);
  }

  void walAndShmOutliveTheLastClose() {
    const std::string dir = newLab();
    const ino_t wal = inodeOf(dir + "/lab.sqlite-wal");
    {
      auto lab = store::LabStore::open(dir);
      lab.addEvent(std::nullopt, std::nullopt, "t", "written");
    }
    QVERIFY(fs::exists(dir + "/lab.sqlite-wal"));
    QVERIFY(fs::exists(dir + "/lab.sqlite-shm"));
    QCOMPARE(inodeOf(dir + "/lab.sqlite-wal"), wal);
    QCOMPARE(otherProcessQuery(QString::fromStdString(dir), "SELECT count(*) FROM events"), QStringList{"1"});
  }

  void lostLocksKeepTheWalInPlaceAndStopWriting() {
    const std::string dir = newLab();
    auto lab = store::LabStore::open(dir);
    lab.addEvent(std::nullopt, std::nullopt, "t", "before");
    const ino_t wal = inodeOf(dir + "/lab.sqlite-wal"), shm = inodeOf(dir + "/lab.sqlite-shm");
    openAndClose(dir + "/lab.sqlite-shm");  // our locks are gone: the writer will think it is alone
    openAndClose(dir + "/lab.sqlite");
    QVERIFY(runWriter(QString::fromStdString(dir), 3));
    QCOMPARE(inodeOf(dir + "/lab.sqlite-wal"), wal);  // its last close left them in place
    QCOMPARE(inodeOf(dir + "/lab.sqlite-shm"), shm);
    QVERIFY2(QString::fromStdString(lab.db().walFilesLost()).contains("locks on"), lab.db().walFilesLost().c_str());
    try {
      lab.addEvent(std::nullopt, std::nullopt, "t", "after the writer");
      QFAIL("a write without the connection's locks was accepted");
    } catch (const store::LabFilesLost& e) {
      QVERIFY2(QString(e.what()).contains("were dropped") && QString(e.what()).contains("writing stopped"), e.what());
    }
    QCOMPARE(otherProcessQuery(QString::fromStdString(dir), "SELECT count(*) FROM events WHERE message = 'before'"), QStringList{"1"});
    QCOMPARE(otherProcessQuery(QString::fromStdString(dir), "SELECT count(*) FROM metrics"), QStringList{"3"});
    QCOMPARE(otherProcessQuery(QString::fromStdString(dir), "PRAGMA integrity_check"), QStringList{"ok"});
  }

  void deletedWalStopsWritingLoudly() {
    const std::string dir = newLab();
    {
      auto lab = store::LabStore::open(dir);
      const auto run = lab.runs().requestCreate({"r", "train", "crosslab", "m", 10, "", ""});
      lab.addEvent(run, std::nullopt, "t", "before");
      QVERIFY(lab.db().walFilesLost().empty());
      // What a last closer without PERSIST_WAL does under a connection that lost its locks:
      // checkpoint everything into lab.sqlite, then unlink the -wal and -shm.
      lab.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
      fs::remove(dir + "/lab.sqlite-wal");
      fs::remove(dir + "/lab.sqlite-shm");
      try {
        lab.addEvent(run, std::nullopt, "t", "into a deleted file");
        QFAIL("a write into a deleted -wal was accepted");
      } catch (const store::LabFilesLost& e) {
        QVERIFY2(QString(e.what()).contains("lab.sqlite-wal was deleted"), e.what());
        QVERIFY2(QString(e.what()).contains("writing stopped"), e.what());
      }
      // Statements outside an explicit transaction are refused too (the commit hook), for good.
      QVERIFY_THROWS_EXCEPTION(store::LabFilesLost, lab.runs().requestStatus(run, train::RunStatus::Failed, "x"));
      QVERIFY(!lab.db().walFilesLost().empty());
    }
    auto reopened = store::LabStore::open(dir);
    QCOMPARE(QString::fromStdString(reopened.db().scalarText("PRAGMA integrity_check")), QString("ok"));
    QCOMPARE(reopened.db().scalarInt("SELECT count(*) FROM events WHERE message = 'before'"), 1);
    QCOMPARE(reopened.db().scalarInt("SELECT count(*) FROM events WHERE message = 'into a deleted file'"), 0);
    reopened.addEvent(std::nullopt, std::nullopt, "t", "after reopening");  // a fresh connection writes again
  }

  void replacedWalStopsWriting() {
    const std::string dir = newLab();
    auto lab = store::LabStore::open(dir);
    fs::rename(dir + "/lab.sqlite-wal", dir + "/old-wal");
    std::ofstream(dir + "/lab.sqlite-wal").put('\0');
    try {
      lab.addEvent(std::nullopt, std::nullopt, "t", "x");
      QFAIL("a write after the -wal was replaced was accepted");
    } catch (const store::LabFilesLost& e) {
      QVERIFY2(QString(e.what()).contains("lab.sqlite-wal was replaced"), e.what());
    }
  }

  void readersAndWritersRefuseTheDatabase() {
    const std::string dir = newLab();
    auto lab = store::LabStore::open(dir);
    const std::string db = dir + "/lab.sqlite";
    QVERIFY_THROWS_EXCEPTION(eval::EvalError, eval::loadOutputs(db));
    QVERIFY_THROWS_EXCEPTION(eval::EvalError, eval::loadEvalSet(db + "-wal"));
    QVERIFY_THROWS_EXCEPTION(eval::EvalError, eval::writeFileAtomic(db, "x"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, util::sha256File(db + "-shm"));
    try {
      train::loadDataFile(db);
      QFAIL("training data read from lab.sqlite");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("is a lab's database; only SQLite opens it"), e.what());
    }
    // None of them opened the files: this process still holds its SQLite locks.
    QVERIFY(posixLocksHeld(db) > 0);
    QVERIFY(posixLocksHeld(db + "-shm") > 0);
    QCOMPARE(QString::fromStdString(lab.db().scalarText("PRAGMA integrity_check")), QString("ok"));
  }
};

QTEST_GUILESS_MAIN(TestLabFiles)
#include "test_lab_files.moc"
