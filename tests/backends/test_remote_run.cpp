// Remote training over loopback SSH: the LLaMA-Factory stand-in launched detached,
// trainer_log.jsonl and output tailed into the RunMonitor, every way a run dies.
#include <QFile>
#include <QThread>
#include <QtTest>

#include <fstream>

#include "backends/remote/remote_run.h"
#include "backends/remote/run_follower.h"
#include "core/store/lab_store.h"
#include "core/train/recipe.h"
#include "loopback_target.h"

using crosslab::remote::RemoteRun;
using crosslab::ssh::SshSession;
using crosslab::train::RunMonitor;
using crosslab::train::RunMonitorOptions;
using crosslab::train::RunStatus;

class TestRemoteRun : public QObject {
  Q_OBJECT
  SshdFixture sshd_;
  QTemporaryDir work_;
  std::unique_ptr<SshSession> session_;
  double now_ = 0;

  // Runs the stand-in in MODE on the box and follows it until the monitor calls it.
  // The stand-in's run folder for MODE on the box, with its train.yaml.
  std::string stage(const QString& mode) {
    const std::string dir = work_.filePath("run-" + mode).toStdString();
    QDir().mkpath(QString::fromStdString(dir));
    auto recipe = crosslab::train::Recipe::labDefaults();
    recipe.modelPath = "/models/llama";
    recipe.dataset = "lab_sft";
    recipe.outputDir = "output";
    std::ofstream(dir + "/train.yaml") << crosslab::train::recipeToLlamaFactoryYaml(recipe);
    return dir;
  }
  static void launch(RemoteRun& run, const QString& mode) {
    run.launch("sh " + QStringLiteral(CROSSLAB_TESTS_DIR "/backends/fake_llamafactory.sh").toStdString() + " " +
               mode.toStdString() + " train train.yaml");
  }

  std::pair<RunStatus, std::string> follow(const QString& mode, RunMonitor& monitor, bool advanceClock = false) {
    RemoteRun run(*session_, stage(mode), "output/trainer_log.jsonl");
    launch(run, mode);
    for (int i = 0; i < 400; ++i) {
      if (run.feed(monitor, run.poll())) break;
      if (advanceClock && monitor.lastStep()) now_ += 30;  // 30 s of fake time per poll once steps flowed
      QThread::msleep(25);
    }
    run.kill();
    return {monitor.status(), monitor.reason()};
  }

  RunMonitor monitor() {
    RunMonitorOptions o;
    o.stallFloorSeconds = 60;
    return RunMonitor(o, [this] { return now_; });
  }

 private slots:
  void initTestCase() {
    QString why;
    QVERIFY2(sshd_.start(&why), qPrintable(why));
    session_ = std::make_unique<SshSession>(loopbackTarget(sshd_));
    session_->connect();
  }

  void finishedRunIsFinished() {
    auto m = monitor();
    const auto [state, reason] = follow("ok", m);
    QCOMPARE(state, RunStatus::Finished);
    QCOMPARE(*m.lastStep()->step, std::int64_t{3});
    QCOMPARE(*m.records()[2].loss, 0.23);
    QCOMPARE(*m.records()[0].elapsedSeconds, 1.0);  // str(timedelta) parsed
  }

  // A run over before the follower's first poll (a short run, a slow window): the first
  // verdict the follower sees is "finished" straight from pending. The lab must say
  // finished, with its start stamped, not leave the run pending for ever.
  void aRunOverBeforeTheFirstPollIsFinishedInTheLab() {
    auto lab = crosslab::store::LabStore::create(work_.filePath("lab").toStdString(), "follow");
    crosslab::store::NewRun nr;
    nr.name = "short";
    const std::string dir = stage("short");
    nr.runDir = "loop:" + dir;
    const auto runId = lab.runs().requestCreate(nr);
    RemoteRun run(*session_, dir, "output/trainer_log.jsonl");
    launch(run, "ok");
    // Wait for the run's end without polling it: its wrapper writes exit_status last.
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(QString::fromStdString(dir + "/exit_status")), 60000);
    crosslab::remote::RunFollower follower(run, &lab, runId, true, {}, [this] { return now_; });
    const auto u = follower.step();
    QVERIFY(u.records.size() >= 3);  // every step at once
    QVERIFY(follower.ended());
    QCOMPARE(follower.monitor().status(), RunStatus::Finished);
    const auto row = lab.runs().byId(runId);
    QVERIFY(row);
    QCOMPARE(QString::fromStdString(row->status), QString("finished"));
    QVERIFY(!row->startedAt.empty());
    QVERIFY(!row->endedAt.empty());
    QCOMPARE(row->lastStep.value_or(-1), std::int64_t{3});
  }

  void tracebackFails() {
    auto m = monitor();
    const auto [state, reason] = follow("traceback", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(reason).contains("OSError: Can't load tokenizer"), reason.c_str());
  }

  void rocmOomFails() {
    auto m = monitor();
    const auto [state, reason] = follow("oom_rocm", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(reason).startsWith("GPU out of memory (ROCm)"), reason.c_str());
  }

  void cudaOomFails() {
    auto m = monitor();
    const auto [state, reason] = follow("oom_cuda", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(reason).startsWith("GPU out of memory (CUDA)"), reason.c_str());
  }

  void ncclFails() {
    auto m = monitor();
    const auto [state, reason] = follow("nccl", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY(QString::fromStdString(reason).contains("NCCL"));
  }

  void killedFails() {
    auto m = monitor();
    const auto [state, reason] = follow("killed", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(reason).contains("137"), reason.c_str());
  }

  void exitWithoutEndFails() {
    auto m = monitor();
    const auto [state, reason] = follow("exit0", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY(QString::fromStdString(reason).contains("without an end event"));
  }

  void nanLossFailsWhileTheProcessStillRuns() {
    auto m = monitor();
    const auto [state, reason] = follow("nan", m);
    QCOMPARE(state, RunStatus::Failed);
    QVERIFY(QString::fromStdString(reason).contains("not finite"));
  }

  void stallIsCaughtWithinAMinuteOfFakeTime() {
    auto m = monitor();
    const double start = now_;
    const auto [state, reason] = follow("stall", m, true);
    QCOMPARE(state, RunStatus::Stalled);
    QVERIFY(now_ - start <= 120);  // caught within the 60 s floor plus one 30 s poll step (fake clock)
    QVERIFY(m.costWhileDead(2.99) > 0);
  }

  void vanishedProcessWithoutStatusFails() {
    const std::string dir = work_.filePath("vanish").toStdString();
    RemoteRun run(*session_, dir, "events.jsonl");
    run.launch("sleep 300");
    RunMonitor m;
    QVERIFY(!run.feed(m, run.poll()));
    // Kill the whole group, the capturing shell included: no exit_status is written.
    run.kill();
    bool over = false;
    for (int i = 0; i < 100 && !over; ++i) over = run.feed(m, run.poll());
    QCOMPARE(m.status(), RunStatus::Failed);
    QVERIFY(QString::fromStdString(m.reason()).contains("no exit status"));
  }
};

QTEST_GUILESS_MAIN(TestRemoteRun)
#include "test_remote_run.moc"
