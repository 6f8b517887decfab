#include "backends/remote/remote_run.h"

#include <QByteArray>

#include <sstream>

namespace crosslab::remote {
namespace {

using ssh::shellQuote;

std::string decode(const std::string& b64) {
  return QByteArray::fromBase64(QByteArray::fromStdString(b64)).toStdString();
}

}  // namespace

RemoteRun::RemoteRun(ShellHost& host, std::string workDir, std::string eventsFile)
    : host_(&host), workDir_(std::move(workDir)), eventsFile_(std::move(eventsFile)) {}

RemoteRun::RemoteRun(ssh::SshSession& session, std::string workDir, std::string eventsFile)
    : ownedHost_(std::make_unique<SshShell>(session, session.target().host)),
      host_(ownedHost_.get()),
      workDir_(std::move(workDir)),
      eventsFile_(std::move(eventsFile)) {}

RemoteRun::~RemoteRun() = default;

void RemoteRun::launch(const std::string& command) {
  // The wrapper starts the command in the background so that it knows its pid (child_pid:
  // the target of a clean SIGTERM), waits for it, and writes its status via a temp file +
  // rename so a poll never reads half a number. setsid makes the wrapper the leader of a
  // new process group (pid: SIGKILL takes the group whole); nohup and the redirections
  // cut it loose from the launching shell, connection or window.
  const std::string inner = command + " > output.log 2>&1 < /dev/null & echo $! > child_pid; wait $!; "
                                      "echo $? > exit_status.tmp; mv exit_status.tmp exit_status";
  const std::string script =
      "mkdir -p " + shellQuote(workDir_) + " && cd " + shellQuote(workDir_) +
      " && rm -f exit_status exit_status.tmp output.log pid child_pid && "
      "if command -v setsid >/dev/null 2>&1; then d=setsid; else d=; fi && "
      "($d nohup sh -c " + shellQuote(inner) + " < /dev/null > /dev/null 2>&1 & echo $! > pid)";
  const auto r = host_->run(script);
  if (r.status != 0) throw ssh::SshError("cannot launch on " + host_->label() + ": " + r.err);
  attach();
}

void RemoteRun::attach() {
  eventsOffset_ = outputOffset_ = 0;
  eventsPartial_.clear();
}

RemotePoll RemoteRun::poll() {
  // Liveness first: a run that is gone by then has already written exit_status (the
  // rename happens before its shell exits), so "gone without status" is never a race.
  std::ostringstream s;
  s << "cd " << shellQuote(workDir_) << " || exit 3\n"
    << "printf 'A:'; if kill -0 \"$(cat pid 2>/dev/null)\" 2>/dev/null; then echo 1; else echo 0; fi\n"
    << "printf 'E:'; tail -c +" << eventsOffset_ + 1 << " " << shellQuote(eventsFile_) << " 2>/dev/null | base64 | tr -d '\\n'; echo\n"
    << "printf 'O:'; tail -c +" << outputOffset_ + 1 << " output.log 2>/dev/null | base64 | tr -d '\\n'; echo\n"
    << "printf 'X:'; cat exit_status 2>/dev/null; echo\n";
  const auto r = host_->run(s.str());
  if (r.status == 3) throw ssh::SshError("the run's folder " + workDir_ + " is gone from " + host_->label());
  RemotePoll p;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 2 || line[1] != ':') continue;
    const std::string value = line.substr(2);
    switch (line[0]) {
      case 'A': p.alive = value == "1"; break;
      case 'E': p.events = decode(value); break;
      case 'O': p.output = decode(value); break;
      case 'X':
        if (!value.empty()) p.exitStatus = std::stoi(value);
        break;
      default: break;
    }
  }
  eventsOffset_ += p.events.size();
  outputOffset_ += p.output.size();
  return p;
}

bool RemoteRun::feed(train::RunMonitor& monitor, const RemotePoll& p) {
  eventsPartial_ += p.events;
  size_t start = 0;
  for (size_t nl; (nl = eventsPartial_.find('\n', start)) != std::string::npos; start = nl + 1)
    monitor.feedEventLine(eventsPartial_.substr(start, nl - start));
  eventsPartial_.erase(0, start);
  if (!p.output.empty()) monitor.feedOutput(p.output);
  if (p.exitStatus) {
    if (!eventsPartial_.empty()) monitor.feedEventLine(eventsPartial_);
    eventsPartial_.clear();
    monitor.processExited(*p.exitStatus);
  } else if (!p.alive) {
    monitor.processExited(-1);
  }
  monitor.tick();
  const auto s = monitor.status();
  return train::isTerminal(s) || s == train::RunStatus::Stalled;
}

bool RemoteRun::stop(int graceSeconds) {
  std::ostringstream s;
  s << "cd " << shellQuote(workDir_) << " || exit 0\n"
    << "c=$(cat child_pid 2>/dev/null); p=$(cat pid 2>/dev/null)\n"
    << "[ -n \"$c\" ] && kill -TERM \"$c\" 2>/dev/null\n"
    << "i=0; while [ -n \"$c\" ] && kill -0 \"$c\" 2>/dev/null && [ $i -lt " << graceSeconds * 10
    << " ]; do sleep 0.1; i=$((i+1)); done\n"
    << "clean=1; if [ -n \"$c\" ] && kill -0 \"$c\" 2>/dev/null; then clean=0; fi\n"
    // The wrapper writes exit_status right after its command ends: let it, then take the rest.
    << "j=0; while [ $clean = 1 ] && [ ! -f exit_status ] && [ $j -lt 50 ]; do sleep 0.1; j=$((j+1)); done\n"
    << "[ -n \"$p\" ] && kill -KILL -- -\"$p\" 2>/dev/null; [ -n \"$c\" ] && kill -KILL \"$c\" 2>/dev/null\n"
    << "echo clean=$clean\n";
  const auto r = host_->run(s.str());
  return r.out.find("clean=1") != std::string::npos;
}

void RemoteRun::kill() {
  host_->run("cd " + shellQuote(workDir_) + " && p=$(cat pid 2>/dev/null); c=$(cat child_pid 2>/dev/null); "
             "[ -n \"$p\" ] && kill -KILL -- -\"$p\" 2>/dev/null; [ -n \"$c\" ] && kill -KILL \"$c\" 2>/dev/null; true");
}

}  // namespace crosslab::remote
