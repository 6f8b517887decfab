#include "backends/runs/run_controller.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <atomic>
#include <map>

#include "backends/remote/box_access.h"
#include "backends/secrets/keyring.h"
#include "backends/remote/remote_run.h"
#include "backends/remote/run_follower.h"
#include "backends/remote/run_stage.h"
#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"
#include "core/venues/venue_store.h"

namespace fs = std::filesystem;

namespace crosslab::backends {

using train::RunStatus;

class RunWorker : public QObject {
  Q_OBJECT
 public:
  RunController::Options options;
  std::atomic<bool> cancel{false};  // the controller is going: long transfers give up

  void setLab(const QString& path);
  void start(const StartRequest& request);
  void stop(qint64 runId);
  void tick();
  void shutdown() {
    timer_->stop();
    follows_.clear();
    lab_.reset();
  }
  void init() {
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, &RunWorker::tick);
    timer_->start(options.tickMs);
  }
  void restartTimer() {
    if (timer_) timer_->start(options.tickMs);
  }

 signals:
  void info(const crosslab::backends::FollowInfo& info);
  void message(qint64 runId, const QString& line);

 private:
  struct Follow {
    qint64 runId = 0;
    RunLaunch launch;
    std::unique_ptr<ssh::SshSession> session;
    std::unique_ptr<remote::ShellHost> host;
    std::unique_ptr<remote::RemoteRun> run;
    std::unique_ptr<remote::RunFollower> follower;
    QString phase;
    int failures = 0;
    // Being started: tick() leaves it alone (a keyring read in the start spins this thread's
    // event loop, and a follower of a run not launched yet would call it dead).
    bool starting = false;
  };

  void attach(const store::RunSummary& row);
  void connectHost(Follow& f);
  void publish(Follow& f);
  void finish(Follow& f);
  void fail(qint64 runId, const QString& why);
  std::optional<venues::BoxRow> boxOf(const RunLaunch& l);

  QTimer* timer_ = nullptr;
  QString labPath_;
  std::unique_ptr<store::LabStore> lab_;
  std::map<qint64, std::unique_ptr<Follow>> follows_;
};

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

std::string shellJoin(const QStringList& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + ssh::shellQuote(w.toStdString());
  return out;
}

}  // namespace

std::optional<venues::BoxRow> RunWorker::boxOf(const RunLaunch& l) {
  venues::VenueStore venues(*lab_);
  for (const auto& b : venues.boxes(true))
    if ((l.boxId && b.id == l.boxId) || (!l.boxId && b.name == l.box && b.active())) return b;
  return std::nullopt;
}

void RunWorker::connectHost(Follow& f) {
  if (!f.launch.onBox()) {
    if (!f.host) f.host = std::make_unique<remote::LocalShell>();
    return;
  }
  if (!f.session) {
    const auto box = boxOf(f.launch);
    if (!box) throw ssh::SshError("the box '" + f.launch.box + "' is no longer in the lab");
    f.session = std::make_unique<ssh::SshSession>(remote::boxTarget(*box));
    f.host = std::make_unique<remote::SshShell>(*f.session, f.launch.box);
  }
  f.session->ensureConnected();
}

void RunWorker::setLab(const QString& path) {
  follows_.clear();  // stop following; the runs themselves go on
  lab_.reset();
  labPath_ = path;
  if (path.isEmpty()) return;
  try {
    lab_ = std::make_unique<store::LabStore>(store::LabStore::open(path.toStdString()));
    for (const auto& row : lab_->runs().list())
      if (train::isActive(row.state) && !row.launchJson.empty()) attach(row);
  } catch (const std::exception& e) {
    spdlog::warn("runs of {}: {}", path.toStdString(), e.what());
  }
}

void RunWorker::attach(const store::RunSummary& row) {
  auto f = std::make_unique<Follow>();
  f->runId = row.id;
  f->launch = RunLaunch::fromJson(row.launchJson);
  if (f->launch.workDir.empty()) return;
  f->phase = "following";
  auto& ref = *f;
  follows_[row.id] = std::move(f);
  try {
    connectHost(ref);
    ref.run = std::make_unique<remote::RemoteRun>(*ref.host, ref.launch.workDir, ref.launch.eventsFile);
    ref.run->attach();
    ref.follower = std::make_unique<remote::RunFollower>(*ref.run, lab_.get(), row.id, ref.launch.onBox(), options.monitor);
  } catch (const std::exception& e) {
    ref.phase = "cannot reach " + q(ref.launch.box) + ": " + e.what() + "; retrying";
  }
  publish(ref);
}

void RunWorker::fail(qint64 runId, const QString& why) {
  try {
    lab_->runs().requestStatus(runId, RunStatus::Failed, why.toStdString());
  } catch (const std::exception& e) {
    spdlog::warn("run {}: {}", runId, e.what());
  }
  FollowInfo i;
  i.runId = runId;
  i.status = RunStatus::Failed;
  i.reason = why;
  i.phase = why;
  emit info(i);
  emit message(runId, why);
}

void RunWorker::start(const StartRequest& r) {
  if (!lab_) return;
  auto f = std::make_unique<Follow>();
  f->runId = r.runId;
  f->launch = r.launch;
  f->starting = true;
  auto& ref = *f;
  follows_[r.runId] = std::move(f);
  try {
    if (!ref.launch.onBox()) {
      ref.phase = "starting";
      connectHost(ref);
      const QString command = QString::fromStdString(shellJoin({r.program, "train", "--recipe", r.recipeFile, "--out",
                                                                q(ref.launch.workDir), "--lab", labPath_, "--run-id",
                                                                QString::number(r.runId)}));
      emit message(r.runId, "$ " + command);
      ref.run = std::make_unique<remote::RemoteRun>(*ref.host, ref.launch.workDir, ref.launch.eventsFile);
      ref.run->launch(command.toStdString());
      ref.follower = std::make_unique<remote::RunFollower>(*ref.run, lab_.get(), r.runId, false, options.monitor);
      ref.phase = "following";
      ref.starting = false;
      publish(ref);
      return;
    }
    // A box: connect, stage, push the weights that are not there yet, upload, launch.
    ref.phase = "connecting to " + q(ref.launch.box);
    publish(ref);
    connectHost(ref);
    // Paths on the box relative to its home are made absolute: the trainer runs in its work
    // folder, and a server started later elsewhere reads the same weights.
    const auto home = ref.host->run("pwd");
    const std::string homeDir = home.status == 0 ? QString::fromStdString(home.out).trimmed().toStdString() : std::string();
    for (std::string* p : {&ref.launch.workDir, &ref.launch.modelOnHost})
      if (!p->empty() && p->front() != '/' && !homeDir.empty()) *p = homeDir + "/" + *p;
    lab_->runs().requestLaunch(r.runId, ref.launch.toJson());
    QTemporaryDir stageDir;
    const fs::path stage = stageDir.path().toStdString();
    const auto recipe = train::loadRecipeFile(r.recipeFile.toStdString());
    const auto staged = remote::stageRun(recipe, remote::engineFromString(ref.launch.engine), ref.launch.dataFile,
                                         ref.launch.modelOnHost, stage, r.program.toStdString());
    {
      const auto guard = secrets::outgoingGuard();
      guard.checkPath(stage);
      guard.checkText(staged.command, "the launch command");
    }
    QElapsedTimer shown;
    shown.start();
    const double pushAt = ledger::epochNow();
    const auto sent = remote::pushModel(
        *ref.session, r.modelDir.toStdString(), ref.launch.modelOnHost, [&](std::uint64_t done, std::uint64_t total) {
          if (shown.elapsed() < 250 && done < total) return;
          shown.restart();
          ref.phase = QString("pushing weights %1 / %2 MB").arg(double(done) / 1e6, 0, 'f', 1).arg(double(total) / 1e6, 0, 'f', 1);
          publish(ref);
        },
        &cancel);
    if (sent && ref.launch.boxId)
      ledger::LifeRecorder(*lab_).transfer(ref.launch.boxId, ledger::Direction::Push, "weights -> " + ref.launch.modelOnHost,
                                           static_cast<std::int64_t>(sent), pushAt, ledger::epochNow());
    emit message(r.runId, sent ? QString("pushed %1 MB of weights to %2:%3").arg(double(sent) / 1e6, 0, 'f', 1).arg(q(ref.launch.box), q(ref.launch.modelOnHost))
                               : QString("the weights are already on %1").arg(q(ref.launch.box)));
    ref.phase = "launching";
    publish(ref);
    remote::uploadFolder(*ref.session, stage, ref.launch.workDir);
    emit message(r.runId, q("$ " + staged.command + "   (on " + ref.launch.box + ", in " + ref.launch.workDir + ")"));
    ref.run = std::make_unique<remote::RemoteRun>(*ref.host, ref.launch.workDir, ref.launch.eventsFile);
    ref.run->launch(staged.command);
    ref.follower = std::make_unique<remote::RunFollower>(*ref.run, lab_.get(), r.runId, true, options.monitor);
    if (ref.launch.boxId)  // the box's life records the work (the ledger's compute minutes)
      ledger::LifeRecorder(*lab_).workStarted(ref.launch.boxId, ledger::WorkKind::Train,
                                              "train (" + ref.launch.engine + ") " + ref.launch.workDir, ledger::epochNow(),
                                              {r.runId, std::nullopt});
    ref.phase = "following";
    ref.starting = false;
    publish(ref);
  } catch (const std::exception& e) {
    const QString where = ref.launch.onBox() ? q(ref.launch.box) : QString("this machine");
    follows_.erase(r.runId);  // `ref` is gone from here on
    fail(r.runId, QString("could not start on %1: %2").arg(where, e.what()));
  }
}

void RunWorker::stop(qint64 runId) {
  const auto it = follows_.find(runId);
  if (it == follows_.end() || !it->second->follower || it->second->starting) return;
  auto& f = *it->second;
  f.phase = "stopping (SIGTERM: the trainer writes a checkpoint)";
  publish(f);
  try {
    connectHost(f);
    const bool clean = f.follower->stop(options.stopGraceSeconds, "stopped from the window");
    emit message(runId, clean ? "stopped" : "it did not end in time and was killed");
  } catch (const std::exception& e) {
    f.phase = "could not stop: " + QString::fromUtf8(e.what());
    emit message(runId, f.phase);
  }
  publish(f);
}

void RunWorker::tick() {
  std::vector<qint64> done;
  for (auto& [id, f] : follows_) {
    if (f->starting) continue;
    if (!f->follower) {  // a box that was unreachable when we attached: try again
      try {
        connectHost(*f);
        f->run = std::make_unique<remote::RemoteRun>(*f->host, f->launch.workDir, f->launch.eventsFile);
        f->run->attach();
        f->follower = std::make_unique<remote::RunFollower>(*f->run, lab_.get(), id, f->launch.onBox(), options.monitor);
        f->phase = "following";
      } catch (const std::exception& e) {
        f->phase = "cannot reach " + q(f->launch.box) + ": " + e.what() + "; retrying";
        publish(*f);
        continue;
      }
    }
    try {
      const auto u = f->follower->step();
      f->failures = 0;
      if (f->phase.startsWith("lost")) f->phase = "following";
      if (!u.output.empty())
        for (const auto& line : QString::fromStdString(u.output).split('\n', Qt::SkipEmptyParts)) emit message(id, line);
    } catch (const std::exception& e) {
      ++f->failures;
      f->phase = QString("lost %1 (%2); retrying").arg(q(f->launch.box), e.what());
      if (f->session) f->session->disconnect();
    }
    publish(*f);
    if (f->follower->ended()) {
      finish(*f);
      done.push_back(id);
    }
  }
  for (auto id : done) follows_.erase(id);
}

void RunWorker::finish(Follow& f) {
  const auto status = f.follower->monitor().status();
  if (f.launch.onBox()) {
    if (status == RunStatus::Finished && !f.launch.localDir.empty()) {
      // The adapter comes home into the lab's runs/<name>/, ready to serve or compare.
      try {
        f.phase = "fetching the adapter";
        publish(f);
        connectHost(f);
        fs::create_directories(f.launch.localDir);
        for (const char* file : {"adapter_config.json", "adapter_model.safetensors"})
          f.session->download(f.launch.workDir + "/" + f.launch.outputDir + "/" + file, f.launch.localDir + "/" + file);
        emit message(f.runId, "adapter fetched into " + q(f.launch.localDir));
      } catch (const std::exception& e) {
        emit message(f.runId, QString("could not fetch the adapter: %1").arg(e.what()));
        lab_->addEvent(f.runId, std::nullopt, "train.fetch", std::string("adapter not fetched: ") + e.what());
      }
    } else if (status == RunStatus::Failed) {
      try {  // stop paying for a dead run's leftovers (workers of a crashed launcher)
        f.run->kill();
      } catch (const std::exception&) {
      }
    }
    if (f.launch.boxId) {  // the work item of the box's life ends with the run's status
      ledger::LifeRecorder life(*lab_);
      if (const auto work = life.openWorkForRun(f.runId)) {
        const auto ws = status == RunStatus::Finished ? ledger::WorkStatus::Finished
                        : status == RunStatus::Failed ? ledger::WorkStatus::Failed
                        : status == RunStatus::Stalled ? ledger::WorkStatus::Stalled
                                                       : ledger::WorkStatus::Stopped;
        life.workEnded(*work, ws, ledger::epochNow(), f.follower->monitor().reason());
      }
    }
  }
  f.phase = QString::fromLatin1(train::toString(status));
  FollowInfo i;
  i.runId = f.runId;
  i.status = status;
  i.reason = q(f.follower->monitor().reason());
  i.phase = f.phase;
  i.following = false;
  emit info(i);
}

void RunWorker::publish(Follow& f) {
  FollowInfo i;
  i.runId = f.runId;
  i.phase = f.phase;
  i.pricePerHour = f.launch.pricePerHour;
  i.following = true;
  if (f.follower) {
    const auto& m = f.follower->monitor();
    i.status = m.status();
    i.reason = q(m.reason());
    const auto& lines = m.lastLines();
    for (size_t k = lines.size() > 5 ? lines.size() - 5 : 0; k < lines.size(); ++k) i.lastLines << q(lines[k]);
    i.secondsSinceProgress = m.secondsSinceProgress();
    i.stallThreshold = m.stallThreshold();
    i.costWhileDead = m.costWhileDead(f.launch.pricePerHour);
  }
  emit info(i);
}

RunController::RunController(QObject* parent) : QObject(parent), thread_(new QThread(this)), worker_(new RunWorker) {
  qRegisterMetaType<FollowInfo>();
  worker_->moveToThread(thread_);
  connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &RunWorker::info, this, &RunController::onInfo);
  connect(worker_, &RunWorker::message, this, &RunController::message);
  thread_->setObjectName("runs");
  thread_->start();
  QMetaObject::invokeMethod(worker_, [w = worker_] { w->init(); });
}

RunController::~RunController() {
  // Let go of every run (they go on) and of the worker's sessions and lab connection; a
  // push of weights in progress gives up (its run never started: it is marked failed).
  worker_->cancel = true;
  QMetaObject::invokeMethod(worker_, [w = worker_] { w->shutdown(); }, Qt::BlockingQueuedConnection);
  thread_->quit();
  thread_->wait();
}

void RunController::setOptions(const Options& options) {
  QMetaObject::invokeMethod(worker_, [w = worker_, options] {
    w->options = options;
    w->restartTimer();
  });
}

void RunController::setLab(const QString& labPath) {
  infos_.clear();
  QMetaObject::invokeMethod(worker_, [w = worker_, labPath] { w->setLab(labPath); });
}

void RunController::start(const StartRequest& request) {
  FollowInfo i;
  i.runId = request.runId;
  i.phase = "starting";
  i.following = true;
  infos_[request.runId] = i;
  QMetaObject::invokeMethod(worker_, [w = worker_, request] { w->start(request); });
}

void RunController::stop(qint64 runId) {
  QMetaObject::invokeMethod(worker_, [w = worker_, runId] { w->stop(runId); });
}

FollowInfo RunController::info(qint64 runId) const { return infos_.value(runId); }

void RunController::onInfo(const FollowInfo& info) {
  infos_[info.runId] = info;
  emit runChanged(info.runId);
}

}  // namespace crosslab::backends

#include "run_controller.moc"
