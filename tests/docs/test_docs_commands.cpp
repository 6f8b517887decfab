// The docs cannot drift from the program: every command in a fenced block of README.md
// and docs/*.md is run, in order, as a user would paste it (/bin/sh, crosslab-cli on
// PATH), in a scratch world: HOME and CROSSLAB_HOME are temporary folders, Hot Aisle is
// the loopback stand-in (HOTAISLE_API_URL), the rented VM is a real OpenSSH sshd on
// 127.0.0.1 whose PATH has stand-ins for the programs a GPU box has (rocm-smi, nvidia-smi,
// llamafactory-cli, vllm). Each must exit 0; where the docs show output ("$ command"
// followed by lines), the output must match ("..." skips lines, "…" stands for any text
// within a line). Lines of a `text` block that start with crosslab-cli (the synopsis) must
// name commands that exist, and every command group must appear there.
//
// The docs' placeholders map onto that world: ~ is the scratch HOME; a model under
// ~/models is a tiny Llama; official.sha256, r.json, train.json and lives.jsonl (the seed
// lab's box lives) are written in the working folder; /models/… and /runs/… on the box are
// folders under the scratch box root; `make X` is checked with `make -n X` (it would build
// and test this very tree).
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <pwd.h>
#include <unistd.h>

#include <csignal>
#include <set>

#include "core/store/lab_store.h"
#include "hotaisle_standin.h"
#include "sshd_fixture.h"
#include "tests/model/tiny_llama.h"
#include "tests/support/cli_runner.h"
#include "tests/train/tiny_tokenizer.h"

using namespace crosslab;

namespace {

struct DocCommand {
  QString where;         // "README.md:123"
  QString command;       // as written, prompt and trailing comment removed
  QStringList expected;  // output shown under a "$ command" line, if any
};

struct Docs {
  QList<DocCommand> commands;
  QList<QPair<QString, QString>> synopsis;  // (where, "crosslab-cli lab init|info PATH …")
};

QString stripComment(const QString& line) {
  // A '#' that starts a word begins a shell comment (not one inside a word or quotes).
  bool single = false, dbl = false;
  for (int i = 0; i < line.size(); ++i) {
    const QChar c = line[i];
    if (c == '\'' && !dbl) single = !single;
    if (c == '"' && !single) dbl = !dbl;
    if (c == '#' && !single && !dbl && (i == 0 || line[i - 1].isSpace())) return line.left(i).trimmed();
  }
  return line.trimmed();
}

Docs extract(const QStringList& files, const QString& root) {
  Docs d;
  for (const QString& file : files) {
    QFile f(root + "/" + file);
    if (!f.open(QIODevice::ReadOnly)) continue;
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n');
    for (int i = 0; i < lines.size(); ++i) {
      if (!lines[i].startsWith("```")) continue;
      const QString lang = lines[i].mid(3).trimmed();
      int end = i + 1;
      while (end < lines.size() && !lines[end].startsWith("```")) ++end;
      // A block written with "$ " prompts shows output under each command.
      bool prompts = false;
      for (int k = i + 1; k < end; ++k) prompts = prompts || lines[k].startsWith("$ ");
      for (int k = i + 1; k < end; ++k) {
        const QString& line = lines[k];
        const QString where = file + ":" + QString::number(k + 1);
        if (lang == "text") {
          if (line.startsWith("crosslab-cli ")) d.synopsis.append({where, line});
        } else if (lang == "sh" || lang == "bash" || lang == "console") {
          if (prompts && line.startsWith("$ ")) d.commands.append({where, stripComment(line.mid(2)), {}});
          else if (prompts && !d.commands.isEmpty()) d.commands.last().expected.append(line);
          else if (!prompts && !stripComment(line).isEmpty()) d.commands.append({where, stripComment(line), {}});
        }
      }
      i = end;
    }
  }
  return d;
}

void writeFile(const QString& path, const QByteArray& bytes) {
  QDir().mkpath(QFileInfo(path).path());
  QFile f(path);
  if (f.open(QIODevice::WriteOnly)) f.write(bytes);
}

void writeScript(const QString& path, const QByteArray& body) {
  writeFile(path, "#!/bin/sh\n" + body);
  QFile(path).setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                             QFileDevice::ReadGroup | QFileDevice::ExeGroup | QFileDevice::ReadOther |
                             QFileDevice::ExeOther);
}

// "lab init|info PATH" → {"lab init", "lab info"}; "version | help [COMMAND]" → {"version",
// "help"}: a lone "|" separates whole commands, "a|b" alternatives of one word.
QStringList synopsisPaths(const QString& line) {
  // The synopsis ends where two spaces start its description column.
  QStringList words = line.section("  ", 0, 0).split(' ', Qt::SkipEmptyParts);
  words.removeFirst();  // crosslab-cli
  QStringList out;
  QList<QStringList> parts;
  auto flush = [&] {
    QStringList paths{QString()};
    for (const QStringList& alts : parts) {
      QStringList next;
      for (const QString& prefix : paths)
        for (const QString& a : alts) next << (prefix.isEmpty() ? a : prefix + " " + a);
      paths = next;
    }
    if (!parts.isEmpty()) out << paths;
    parts.clear();
  };
  bool done = false;  // past the command words of this segment (PATH, --flag, [OPTIONAL] …)
  for (const QString& w : words) {
    if (w == "|") {
      flush();
      done = false;
      continue;
    }
    if (done || !w[0].isLower()) {
      done = true;
      continue;
    }
    parts.append(w.split('|'));
  }
  flush();
  return out;
}

}  // namespace

class TestDocsCommands : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString home_, work_, boxRoot_;
  HotAisleStandin hotaisle_{"myteam"};
  SshdFixture sshd_;
  Docs docs_;
  QProcessEnvironment env_;
  // The loopback "box" is this machine: remote work folders land in the sshd user's real
  // home. Those the docs' commands create are removed at the end (never one that was there).
  QString boxHome_;
  QStringList boxLeftovers_;
  QString serverPidFile_;  // the "vLLM" a docs command left running on the box

  void noteBoxFolder(const QString& relative) {
    if (relative.isEmpty() || relative.startsWith('/') || relative.contains("..")) return;
    if (!QFileInfo::exists(boxHome_ + "/" + relative)) boxLeftovers_ << boxHome_ + "/" + relative;
  }

  // The rented VM is the loopback sshd: after `venues provision` records it (Hot Aisle
  // gives an address only), its port, user and key become the test sshd's.
  void pointTheVmAtTheLoopbackBox() {
    auto lab = store::LabStore::open((home_ + "/crosslab/home").toStdString());
    auto st = lab.db().prepare("UPDATE boxes SET port = ?, ssh_user = ?, key_file = ? WHERE deleted_at IS NULL");
    st.bind(1, sshd_.port()).bind(2, sshd_.user().toStdString()).bind(3, sshd_.userKey().toStdString()).run();
  }

  // The docs' absolute box paths (/models/…, /runs/…) live under the scratch box root.
  QString mapped(QString command) const {
    static const QRegularExpression boxPath(QStringLiteral("(?<=[\\s=,])/(models|runs)/"));
    return command.replace(boxPath, boxRoot_ + "/\\1/");
  }

 private slots:
  void initTestCase() {
    boxHome_ = QString::fromLocal8Bit(getpwuid(getuid())->pw_dir);
    noteBoxFolder("crosslab-serve");  // remote serve's default work folder
    const QString root = QStringLiteral(CROSSLAB_SOURCE_DIR);
    QStringList files{"README.md"};
    for (const QString& f : QDir(root + "/docs").entryList({"*.md"}, QDir::Files, QDir::Name)) files << "docs/" + f;
    docs_ = extract(files, root);
    QVERIFY2(docs_.commands.size() >= 10, "the docs' fenced commands were not found");

    home_ = tmp_.filePath("home");
    work_ = tmp_.filePath("work");
    boxRoot_ = tmp_.filePath("box-root");
    QVERIFY(QDir().mkpath(work_));
    QVERIFY(QDir().mkpath(home_ + "/.ssh"));

    // The programs a GPU box has, as stand-ins on the box's PATH.
    const QString bin = tmp_.filePath("box-bin");
    writeScript(bin + "/rocm-smi", "echo '========== ROCm System Management Interface =========='\necho 'GPU[0] MI300X'\n");
    writeScript(bin + "/nvidia-smi", "echo 196608\n");  // MiB: a 192 GB card
    writeScript(bin + "/llamafactory-cli",
                "exec sh '" + QByteArray(CROSSLAB_TESTS_DIR) + "/backends/fake_llamafactory.sh' ok \"$@\"\n");
    serverPidFile_ = tmp_.filePath("vllm.pid");
    writeScript(bin + "/vllm",  // vllm serve MODEL … --port P …: the /health stand-in on P
                "port=8000\nwhile [ $# -gt 0 ]; do [ \"$1\" = --port ] && port=$2; shift; done\n"
                "echo $$ > '" + serverPidFile_.toUtf8() + "'\n"
                "exec '" + QByteArray(SERVE_STANDIN) + "' --port \"$port\"\n");
    sshd_.setRemotePath(bin);
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
    hotaisle_.setNextVmNumber(123);
    hotaisle_.pollsUntilRunning = 1;
    QVERIFY(hotaisle_.start() > 0);

    // The docs' placeholders: the SSH public key, a model under ~/models, its official
    // hashes, a recipe, a training set, an adapter on the box.
    QFile::copy(sshd_.userKey() + ".pub", home_ + "/.ssh/id_ed25519.pub");
    const QString model = home_ + "/models/llama-3.1-70b";
    testing::writeTinyLlama(model.toStdString(), testing::TinyLlamaSpec{});
    testing::writeTinyTokenizer(model.toStdString());
    writeFile(model + "/tokenizer_config.json", "{}");
    QByteArray sums;
    for (const QString& f : QDir(model).entryList(QDir::Files, QDir::Name)) {
      QFile in(model + "/" + f);
      QVERIFY(in.open(QIODevice::ReadOnly));
      sums += QCryptographicHash::hash(in.readAll(), QCryptographicHash::Sha256).toHex() + "  " + f.toUtf8() + "\n";
    }
    writeFile(work_ + "/official.sha256", sums);
    writeFile(work_ + "/r.json", "{\"model\": \"/models/llama-3.1-70b\", \"lora_rank\": 16, \"cutoff_len\": 512}");
    {  // docs/ledger.md imports the seed lab's lives (JSON Lines, one life a line)
      QFile lives(QStringLiteral(CROSSLAB_TESTS_DIR) + "/fixtures/seed_lab/lives.jsonl");
      QVERIFY(lives.open(QIODevice::ReadOnly));
      writeFile(work_ + "/lives.jsonl", lives.readAll());
    }
    writeFile(work_ + "/train.json", "[{\"instruction\": \"q\", \"input\": \"\", \"output\": \"a\"}]");
    testing::writeTinyLora((boxRoot_ + "/runs/1/adapter").toStdString(), testing::TinyLlamaSpec{}, 4, 8, false, 1);

    env_ = QProcessEnvironment::systemEnvironment();
    env_.insert("HOME", home_);
    env_.insert("CROSSLAB_HOME", home_ + "/crosslab");
    env_.insert("HOTAISLE_API_URL", QString::fromStdString(hotaisle_.baseUrl()));
    env_.insert("PATH", QFileInfo(testing::cliPath()).path() + ":" + env_.value("PATH"));
    env_.remove("SSH_AUTH_SOCK");
    env_.remove("HOTAISLE_API_KEY");
    env_.remove("CROSSLAB_LOG");
  }

  // The synopsis names real commands, and every command group is in it.
  void synopsisNamesEveryCommandGroup() {
    QVERIFY(!docs_.synopsis.isEmpty());
    const auto r = testing::runCli({"help", "--json"});
    QCOMPARE(r.code, 0);
    std::set<QString> paths{"help"};
    std::set<QString> groups;
    for (const auto& c : QJsonDocument::fromJson(r.out).object().value("commands").toArray()) {
      paths.insert(c.toObject().value("path").toString());
      groups.insert(c.toObject().value("path").toString().section(' ', 0, 0));
    }
    std::set<QString> documentedGroups;
    for (const auto& [where, line] : docs_.synopsis)
      for (const QString& p : synopsisPaths(line)) {
        QVERIFY2(paths.count(p), qPrintable(where + ": '" + p + "' is not a crosslab-cli command"));
        documentedGroups.insert(p.section(' ', 0, 0));
      }
    for (const QString& g : groups)
      QVERIFY2(documentedGroups.count(g), qPrintable("command group '" + g + "' is missing from the README's synopsis"));
  }

  // Every fenced command, in order, exits 0 and prints what the docs show.
  void everyFencedCommandRuns() {
    for (const DocCommand& doc : docs_.commands) {
      qInfo("%s: %s", qPrintable(doc.where), qPrintable(doc.command));
      QString command = doc.command;
      if (command.startsWith("export ")) {  // export NAME=VALUE: for the commands that follow
        const QString assignment = command.mid(7).trimmed();
        const QString name = assignment.section('=', 0, 0), value = assignment.section('=', 1);
        QVERIFY2(name == "HOTAISLE_API_KEY", qPrintable(doc.where + ": no stand-in value for " + name));
        env_.insert(name, value == "…" ? QString(HotAisleStandin::kKey) : value);
        continue;
      }
      if (command.startsWith("make ")) {  // it would build and test this tree: its recipe must exist
        const auto r = testing::runProgram("make", {"-n", "-C", CROSSLAB_SOURCE_DIR, command.mid(5).trimmed()});
        QVERIFY2(r.code == 0, qPrintable(doc.where + ": make -n " + command.mid(5) + ": " + r.err));
        continue;
      }
      QVERIFY2(command.startsWith("crosslab-cli "), qPrintable(doc.where + ": not a crosslab-cli command: " + command));
      command = mapped(command);
      testing::CliOptions o;
      o.env = env_;
      if (command.startsWith("crosslab-cli remote serve ")) {
        runServerUntilHealthyThenInterrupt(doc, command, o);
        continue;
      }
      const auto r = testing::runProgram("/bin/sh", {"-c", "cd '" + work_ + "' && exec " + command}, o);
      QVERIFY2(r.code == 0, qPrintable(doc.where + ": " + doc.command + "\n-> exit " + QString::number(r.code) + "\n" +
                                      QString::fromUtf8(r.err)));
      if (!doc.expected.isEmpty()) compareOutput(doc, QString::fromUtf8(r.out));
      if (command.startsWith("crosslab-cli venues provision ")) pointTheVmAtTheLoopbackBox();
      if (!doc.expected.isEmpty()) qInfo("  output as shown (%d lines)", int(doc.expected.size()));
      // "launched in vm-123:crosslab-runs/2026-…Z (detached; …)": a folder in the box's home.
      static const QRegularExpression launched(QStringLiteral("launched in [^:]+:(\\S+) \\("));
      if (const auto m = launched.match(QString::fromUtf8(r.err)); m.hasMatch()) {
        const QString dir = m.captured(1);
        if (!dir.startsWith('/') && !dir.contains("..")) boxLeftovers_ << boxHome_ + "/" + dir;
      }
    }
  }

  void cleanupTestCase() {
    QFile pid(serverPidFile_);
    if (pid.open(QIODevice::ReadOnly))
      if (const int n = pid.readAll().trimmed().toInt(); n > 1) ::kill(n, SIGTERM);
    for (const QString& dir : boxLeftovers_) QDir(dir).removeRecursively();
    QDir(boxHome_).rmdir("crosslab-runs");  // only if the docs' run was its one folder
  }

 private:
  // A shown line matches as written, except that "…" in it stands for any text within
  // the line (a figure that changes with the lab's schema version, a date, an id).
  static bool lineMatches(const QString& got, const QString& want) {
    if (!want.contains(QChar(0x2026))) return got == want;
    QStringList parts = want.split(QChar(0x2026));
    for (QString& part : parts) part = QRegularExpression::escape(part);
    return QRegularExpression(QRegularExpression::anchoredPattern(parts.join(".*"))).match(got).hasMatch();
  }

  // Output as the docs show it: the scratch HOME reads as /home/you; "..." skips lines
  // and "…" any text within one.
  void compareOutput(const DocCommand& doc, QString out) {
    out.replace(home_, "/home/you");
    const QStringList got = out.trimmed().split('\n');
    int g = 0;
    for (int e = 0; e < doc.expected.size(); ++e) {
      const QString want = doc.expected[e];
      if (want.trimmed() == "...") {
        if (e + 1 == doc.expected.size()) return;
        while (g < got.size() && !lineMatches(got[g], doc.expected[e + 1])) ++g;
        continue;
      }
      QVERIFY2(g < got.size() && lineMatches(got[g], want),
               qPrintable(doc.where + ": " + doc.command + "\nexpected: " + want + "\nprinted:  " +
                          (g < got.size() ? got[g] : QString("(nothing)")) + "\nwhole output:\n" + out));
      ++g;
    }
  }

  // `remote serve` runs until Ctrl-C: wait for its URL line, check /health through the
  // tunnel it printed, interrupt it, and expect a clean exit.
  void runServerUntilHealthyThenInterrupt(const DocCommand& doc, const QString& command, const testing::CliOptions& o) {
    QProcess p;
    p.setProcessEnvironment(o.env);
    p.start("/bin/sh", {"-c", "cd '" + work_ + "' && exec " + command});
    QVERIFY(p.waitForStarted(60000));
    QByteArray line;
    for (int i = 0; i < 3000 && !line.contains('\n') && p.state() == QProcess::Running; ++i) {
      p.waitForReadyRead(100);
      line += p.readAllStandardOutput();
    }
    const auto info = QJsonDocument::fromJson(line.left(line.indexOf('\n'))).object();
    QVERIFY2(info.value("url").toString().startsWith("http://127.0.0.1:"),
             qPrintable(doc.where + ": " + line + p.readAllStandardError()));
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);  // Ctrl-C
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
             qPrintable(doc.where + ": exit " + QString::number(p.exitCode()) + "\n" + p.readAllStandardError()));
  }
};

QTEST_GUILESS_MAIN(TestDocsCommands)
#include "test_docs_commands.moc"
