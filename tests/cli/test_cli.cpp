// crosslab-cli as a user runs it: a real child process, its exit codes, stdout, stderr.
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

namespace {

using Result = crosslab::testing::CliResult;

Result cli(const QStringList& args) { return crosslab::testing::runCli(args); }

int lineCount(const QByteArray& text) { return text.trimmed().isEmpty() ? 0 : text.trimmed().count('\n') + 1; }

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void versionPlainAndJson() {
    auto r = cli({"version"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith("crosslab "));
    r = cli({"version", "--json"});
    QCOMPARE(r.code, 0);
    QJsonParseError pe{};
    const auto doc = QJsonDocument::fromJson(r.out, &pe);
    QCOMPARE(pe.error, QJsonParseError::NoError);
    QVERIFY(doc.object().value("version").isString());
    QVERIFY(doc.object().value("schema_version").toInt() >= 1);
  }

  // The engine's own report of the BLAS that serves its fp32 matmul: OpenBLAS as installed,
  // and Debian's reference BLAS (with a warning) when the dynamic linker is pointed at it.
  void versionReportsTheEnginesBlas() {
    auto r = cli({"version", "--json"});
    QCOMPARE(r.code, 0);
    auto engine = QJsonDocument::fromJson(r.out).object().value("engine").toObject();
    QCOMPARE(engine.value("blas").toString(), QString("OpenBLAS"));
    QVERIFY(engine.value("fast_blas").toBool());
    QVERIFY(QFileInfo(engine.value("blas_library").toString()).isFile());
    QVERIFY2(engine.value("blas_config").toString().startsWith("OpenBLAS"), r.out.constData());
    QVERIFY(engine.value("threads").toInt() >= 1);
    QVERIFY2(!r.err.contains("warning"), r.err.constData());

    const QString reference = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";  // libblas3 (install-deps)
    QVERIFY2(QFileInfo(reference).isFile(), "Debian's reference BLAS is missing: run packaging/install-deps.sh");
    QVERIFY(QFile::link(reference, tmp_.filePath("libblas.so.3")));
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("LD_LIBRARY_PATH", tmp_.path());
    r = crosslab::testing::runCli({"version", "--json"}, env);
    QCOMPARE(r.code, 0);
    engine = QJsonDocument::fromJson(r.out).object().value("engine").toObject();
    QCOMPARE(engine.value("blas").toString(), QString("reference BLAS"));
    QVERIFY(!engine.value("fast_blas").toBool());
    QCOMPARE(engine.value("blas_library").toString(), QFileInfo(reference).canonicalFilePath());
    QVERIFY2(r.err.contains("warning: the engine's BLAS is reference BLAS") && r.err.contains("libopenblas0-openmp"),
             r.err.constData());
  }

  void labInitThenInfoJson() {
    const QString dir = tmp_.filePath("lab1");
    auto r = cli({"lab", "init", dir, "--name", "first"});
    QCOMPARE(r.code, 0);
    QVERIFY(QFile::exists(dir + "/lab.sqlite"));
    r = cli({"lab", "info", dir, "--json"});
    QCOMPARE(r.code, 0);
    QCOMPARE(lineCount(r.out), 1);
    const auto obj = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(obj.value("name").toString(), QString("first"));
    QVERIFY(obj.value("schema_version").toInt() >= 2);
    const auto counts = obj.value("counts").toObject();
    for (const char* t : {"labs", "venues", "boxes", "runs", "metrics", "events", "benchmarks", "benchmark_levels",
                          "samples", "verdicts", "ledger", "friction"})
      QVERIFY2(counts.contains(t), t);
    QCOMPARE(counts.value("labs").toInt(), 1);
    QCOMPARE(counts.value("runs").toInt(), 0);
    r = cli({"lab", "info", dir});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("schema"));
  }

  void failuresAreExit1WithOneLine() {
    const QString dir = tmp_.filePath("lab2");
    QCOMPARE(cli({"lab", "init", dir}).code, 0);
    auto r = cli({"lab", "init", dir});  // already a lab
    QCOMPARE(r.code, 1);
    QCOMPARE(lineCount(r.err), 1);
    QVERIFY(r.err.contains("already exists"));
    r = cli({"lab", "info", tmp_.filePath("nowhere")});
    QCOMPARE(r.code, 1);
    QCOMPARE(lineCount(r.err), 1);
    QVERIFY(r.out.isEmpty());
    // A corrupt database: exit 1, one line, no crash.
    QDir().mkpath(tmp_.filePath("junk"));
    QFile f(tmp_.filePath("junk/lab.sqlite"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    r = cli({"lab", "info", tmp_.filePath("junk"), "--json"});
    QCOMPARE(r.code, 1);
    QCOMPARE(lineCount(r.err), 1);
    QVERIFY(r.err.contains("not a readable crosslab lab database"));
  }

  void usageErrorsAreExit2() {
    QCOMPARE(cli({}).code, 2);
    QCOMPARE(cli({"frobnicate"}).code, 2);
    QCOMPARE(cli({"lab"}).code, 2);
    QCOMPARE(cli({"lab", "explode"}).code, 2);
    QCOMPARE(cli({"lab", "info"}).code, 2);                      // missing PATH
    QCOMPARE(cli({"lab", "info", "a", "b"}).code, 2);            // extra argument
    QCOMPARE(cli({"lab", "info", "a", "--bogus"}).code, 2);      // unknown option
    QCOMPARE(cli({"lab", "init", "a", "--name"}).code, 2);       // option without value
    QCOMPARE(cli({"version", "--json=yes"}).code, 2);            // switch with a value
    const auto r = cli({"frobnicate"});
    QVERIFY(r.err.contains("unknown command"));
    QVERIFY(r.out.isEmpty());
  }

  void recipeShowAndExport() {
    auto r = cli({"recipe", "show"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("290 examples -> 37 steps per epoch -> 111 steps"));
    r = cli({"recipe", "export", "--format", "json", "--lora-rank", "8", "--seed", "3"});
    QCOMPARE(r.code, 0);
    const auto obj = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(obj.value("lora_rank").toInt(), 8);
    QCOMPARE(obj.value("seed").toInt(), 3);
    QCOMPARE(obj.value("lora_alpha").toInt(), 32);
    // The exported YAML reads back as the same recipe.
    const QString yaml = tmp_.filePath("r.yaml");
    r = cli({"recipe", "export", "--format", "llamafactory", "--learning-rate", "2e-4"});
    QCOMPARE(r.code, 0);
    QFile f(yaml);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(r.out);
    f.close();
    r = cli({"recipe", "export", "--format", "json", "--recipe", yaml});
    QCOMPARE(r.code, 0);
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("learning_rate").toDouble(), 2e-4);
    QCOMPARE(cli({"recipe", "export", "--format", "xml"}).code, 2);
    r = cli({"recipe", "show", "--gradient-accumulation-steps", "abc"});  // a bad flag value is a usage error
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith("crosslab-cli recipe show: ") && r.err.split('\n').first().contains("gradient_accumulation_steps"),
             r.err.constData());
    QCOMPARE(lineCount(r.err), 2);  // the reason, then the usage line
    r = cli({"recipe", "show", "--lora-rank", "abc"});
    QCOMPARE(r.code, 2);
    r = cli({"recipe", "show", "--recipe", tmp_.filePath("missing.yaml")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("missing.yaml"));
  }

  void everyCommandHasHelp() {
    auto r = cli({"help"});
    QCOMPARE(r.code, 0);
    for (const char* c : {"lab init", "lab info", "recipe show", "recipe export", "version"}) QVERIFY2(r.out.contains(c), c);
    for (const QStringList& c : {QStringList{"lab", "init"}, QStringList{"lab", "info"}, QStringList{"version"}}) {
      r = cli(c + QStringList{"--help"});
      QCOMPARE(r.code, 0);
      QVERIFY(r.out.startsWith("usage: crosslab-cli " + c.join(' ').toUtf8()));
    }
    r = cli({"help", "lab", "info"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("--json"));
  }

  // help about help, in every spelling, prints the command list (it once recursed until
  // the stack overflowed: exit 139); -h is --help everywhere; unknown topics are usage errors.
  void helpAboutHelpDoesNotCrash() {
    for (const QStringList& args : {QStringList{"help", "--help"}, QStringList{"help", "-h"}, QStringList{"help", "help"},
                                    QStringList{"--help", "help"}, QStringList{"-h", "--help"}, QStringList{"-h"},
                                    QStringList{"help", "help", "help"}}) {
      const auto r = cli(args);
      QVERIFY2(r.code == 0, qPrintable(args.join(' ') + " -> " + QString::number(r.code)));
      QVERIFY2(r.out.startsWith("usage: crosslab-cli COMMAND"), r.out.constData());
    }
    auto r = cli({"lab", "info", "-h"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith("usage: crosslab-cli lab info"));
    r = cli({"help", "lab"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("crosslab-cli lab init"));
    r = cli({"help", "frobnicate"});
    QCOMPARE(r.code, 2);
    QCOMPARE(lineCount(r.err), 1);
    r = cli({"help", "lab", "info", "extra"});
    QCOMPARE(r.code, 2);
    // `--help` after "--" belongs to the remote command, not to us.
    r = cli({"box", "exec", "nosuchbox", "--", "ls", "--help"});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("nosuchbox"));
  }

  void helpJsonListsEveryCommandWithItsOptions() {
    const auto r = cli({"help", "--json"});
    QCOMPARE(r.code, 0);
    const auto doc = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(doc.value("program").toString(), QString("crosslab-cli"));
    const auto commands = doc.value("commands").toArray();
    QVERIFY(commands.size() > 30);
    bool sawRequired = false;
    for (const auto& c : commands) {
      const auto o = c.toObject();
      QVERIFY(!o.value("path").toString().isEmpty());
      if (o.value("path").toString() == "eval check")
        for (const auto& opt : o.value("options").toArray())
          if (opt.toObject().value("name").toString() == "--outputs") sawRequired = opt.toObject().value("required").toBool();
    }
    QVERIFY(sawRequired);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
