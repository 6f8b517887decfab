// crosslab-cli box …: any machine reachable by SSH (a rented VM, a workstation, a DGX
// Spark, a Mac): add, list, exec, push, pull, forward, remove.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/venue_support.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "backends/ssh/port_forward.h"
#include "core/ledger/life_recorder.h"
#include "core/util/lab_files.h"

namespace fs = std::filesystem;

namespace crosslab::backends {
namespace {

using cli::Args;
using cli::Context;

const cli::OptionSpec kLab{"--lab", true, "lab the box is recorded in (default $CROSSLAB_HOME/home)"};
const cli::OptionSpec kAcceptNew{"--accept-new", false, "trust an unknown host key (a changed key is always refused)"};
const cli::OptionSpec kKnownHosts{"--known-hosts", true, "known_hosts file (default $CROSSLAB_HOME/known_hosts)"};

int toPort(const std::string& text, const char* what) {
  try {
    const int p = std::stoi(text);
    if (p >= 0 && p <= 65535) return p;
  } catch (const std::exception&) {
  }
  throw cli::UsageError(std::string(what) + " must be a port number (0-65535)");
}

int boxAdd(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  venues::BoxRow box;
  box.name = args.positional(0, "NAME");
  box.host = args.value("--host").value_or("");
  box.user = args.value("--user").value_or("");
  if (box.host.empty() || box.user.empty()) throw cli::UsageError("a box needs --host and --user");
  box.port = toPort(args.value("--port").value_or("22"), "--port");
  if (auto key = args.value("--key")) {
    if (!fs::is_regular_file(*key)) throw std::runtime_error("no key file at " + *key);
    box.keyFile = fs::absolute(*key).string();
  }
  if (args.has("--price-per-hour")) box.pricePerHour = args.number("--price-per-hour", 0);
  box.state = "ready";
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  box.venueId = store.ensureVenue(box.name, "ssh");
  box.readyAt = store::utcNow();
  store.addBox(box);
  ctx.out << "added box '" << box.name << "' (" << box.user << "@" << box.host << ":" << box.port << ")\n";
  return 0;
}

int boxList(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto boxes = store.boxes();
  if (args.has("--json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& b : boxes)
      arr.push_back({{"name", b.name}, {"host", b.host}, {"port", b.port}, {"user", b.user}, {"key", b.keyFile},
                     {"state", b.state}, {"venue", b.venue}});
    ctx.out << arr.dump() << "\n";
    return 0;
  }
  for (const auto& b : boxes)
    ctx.out << std::left << std::setw(16) << b.name << b.user << "@" << b.host << ":" << b.port << "  " << b.state << "\n";
  return 0;
}

std::string joinCommand(const Args& args) {
  std::string cmd;
  for (size_t i = 1; i < args.positionals().size(); ++i) cmd += (i > 1 ? " " : "") + args.positionals()[i];
  if (cmd.empty()) throw cli::UsageError("no command to run (box exec NAME -- CMD ...)");
  return cmd;
}

int boxExec(const Args& args, Context& ctx) {
  const std::string name = args.positional(0, "NAME");
  const std::string command = joinCommand(args);
  secretGuard().checkText(command, "the command");
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto box = requireBox(store, name);
  ssh::SshSession session(sshTargetFor(box, args));
  session.connect();
  if (!box.providerVm.empty()) store.noteMilestoneOnce(box.venue, "ssh ready", box.provisionedAt);  // the ladder's timeline
  store.touchBox(box.id, "exec", command.substr(0, 200));
  const int status = session.exec(
      command, [&](const char* d, std::size_t n) { ctx.out.write(d, static_cast<std::streamsize>(n)).flush(); },
      [&](const char* d, std::size_t n) { ctx.err.write(d, static_cast<std::streamsize>(n)).flush(); });
  if (status < 0) throw std::runtime_error("the command on " + name + " ended without an exit status (killed?)");
  return status;
}

// "12.3 MB/s" progress on stderr, at most a few times a second; the line ends (newline)
// when the transfer does, however it ends.
ssh::ProgressFn progressPrinter(std::ostream& err, const std::string& label) {
  struct State {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last{};
    std::uint64_t first = UINT64_MAX;
    std::unique_ptr<cli::Progress> line;
  };
  auto st = std::make_shared<State>();
  return [&err, label, st](std::uint64_t done, std::uint64_t total) {
    if (st->first == UINT64_MAX) st->first = done;  // bytes skipped by a resume do not count toward the rate
    if (!st->line) st->line = std::make_unique<cli::Progress>(err, label, total);
    const auto now = std::chrono::steady_clock::now();
    if (done != total && now - st->last < std::chrono::milliseconds(250)) return;
    st->last = now;
    const double s = std::chrono::duration<double>(now - st->start).count();
    std::ostringstream note;
    note << "bytes  " << std::fixed << std::setprecision(1) << (s > 0 ? (done - st->first) / 1e6 / s : 0) << " MB/s";
    st->line->step(done, note.str());
  };
}

int boxPush(const Args& args, Context& ctx) {
  args.expectPositionals(3, 3);
  const std::string name = args.positional(0, "NAME"), src = args.positional(1, "SRC"), dst = args.positional(2, "DST");
  if (!fs::exists(src)) throw std::runtime_error("no such file or folder: " + src);
  util::refuseLabDatabaseFile(src, "pushing");  // a live database is copied with SQLite, never by reading it
  secretGuard().checkPath(src);  // before anything leaves this machine
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto box = requireBox(store, name);
  ssh::SshSession session(sshTargetFor(box, args));
  session.connect();
  store.touchBox(box.id, "transfer", "push " + src + " -> " + dst);
  const double started = ledger::epochNow();
  std::int64_t bytes = 0;
  if (!fs::is_directory(src)) {
    session.upload(src, dst, progressPrinter(ctx.err, src));
    bytes = static_cast<std::int64_t>(fs::file_size(src));
  } else {
    for (const auto& e : fs::recursive_directory_iterator(src)) {
      const std::string rel = fs::relative(e.path(), src).string();
      const std::string remote = dst + "/" + rel;
      if (e.is_directory()) continue;
      if (util::isLabDatabaseFile(e.path())) {
        ctx.err << "skipped " << rel << ": a lab's database is never copied by reading it\n";
        continue;
      }
      const auto r = session.run("mkdir -p " + ssh::shellQuote(fs::path(remote).parent_path().string()));
      if (r.status != 0) throw std::runtime_error("cannot create folders on " + name + ": " + r.err);
      session.upload(e.path().string(), remote, progressPrinter(ctx.err, rel));
      bytes += static_cast<std::int64_t>(e.file_size());
    }
  }
  // Staging the ledger prices: what moved, how many bytes, how long it took.
  ledger::LifeRecorder(lab).transfer(box.id, ledger::Direction::Push, src + " -> " + dst, bytes, started,
                                     ledger::epochNow());
  return 0;
}

int boxPull(const Args& args, Context& ctx) {
  args.expectPositionals(3, 3);
  const std::string name = args.positional(0, "NAME"), src = args.positional(1, "SRC"), dst = args.positional(2, "DST");
  util::refuseLabDatabaseFile(fs::is_directory(dst) ? fs::path(dst) / fs::path(src).filename() : fs::path(dst), "pulling into");
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto box = requireBox(store, name);
  ssh::SshSession session(sshTargetFor(box, args));
  session.connect();
  store.touchBox(box.id, "transfer", "pull " + src + " -> " + dst);
  const double started = ledger::epochNow();
  std::int64_t bytes = 0;
  if (session.run("test -d " + ssh::shellQuote(src)).status != 0) {
    session.download(src, dst, progressPrinter(ctx.err, src));
    std::error_code ec;  // DST may be the folder the file went into
    const fs::path got = fs::is_directory(dst, ec) ? fs::path(dst) / fs::path(src).filename() : fs::path(dst);
    bytes = fs::is_regular_file(got, ec) ? static_cast<std::int64_t>(fs::file_size(got, ec)) : 0;
  } else {
    // A folder: every file under it, to the same relative place under DST (as push does).
    const auto found = session.run("cd " + ssh::shellQuote(src) + " && find . -type f -print0");
    if (found.status != 0) throw std::runtime_error("cannot list " + src + " on " + name + ": " + found.err);
    std::vector<std::string> files;
    for (size_t start = 0, end; start < found.out.size(); start = end + 1) {
      end = found.out.find('\0', start);
      if (end == std::string::npos) end = found.out.size();
      std::string rel = found.out.substr(start, end - start);
      if (rel.rfind("./", 0) == 0) rel.erase(0, 2);
      if (!rel.empty()) files.push_back(rel);
    }
    std::sort(files.begin(), files.end());
    for (const auto& rel : files) {
      const fs::path local = fs::path(dst) / rel;
      fs::create_directories(local.parent_path());
      session.download(src + "/" + rel, local.string(), progressPrinter(ctx.err, rel));
      std::error_code ec;
      bytes += static_cast<std::int64_t>(fs::file_size(local, ec));
    }
    ctx.err << "pulled " << files.size() << " files from " << name << ":" << src << " to " << dst << "\n";
  }
  // Staging the ledger prices: what moved, how many bytes, how long it took.
  ledger::LifeRecorder(lab).transfer(box.id, ledger::Direction::Pull, src + " -> " + dst, bytes, started,
                                     ledger::epochNow());
  return 0;
}

std::atomic<bool> gStopForward{false};

int boxForward(const Args& args, Context& ctx) {
  args.expectPositionals(3, 3);
  const std::string name = args.positional(0, "NAME");
  const int local = toPort(args.positional(1, "LOCAL_PORT"), "LOCAL_PORT");
  const int remote = toPort(args.positional(2, "REMOTE_PORT"), "REMOTE_PORT");
  const int seconds = args.integer("--for", 0);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto box = requireBox(store, name);
  ssh::PortForward fwd(sshTargetFor(box, args), local, "127.0.0.1", remote);
  const int bound = fwd.start();
  ctx.out << "forwarding 127.0.0.1:" << bound << " -> " << name << ":127.0.0.1:" << remote << " (Ctrl-C stops)"
          << std::endl;
  std::signal(SIGINT, [](int) { gStopForward = true; });
  std::signal(SIGTERM, [](int) { gStopForward = true; });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!gStopForward && fwd.running() && (seconds == 0 || std::chrono::steady_clock::now() < until))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  fwd.stop();
  ctx.err << "forward stopped after " << fwd.connectionsServed() << " connection(s)\n";
  return 0;
}

int boxRemove(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const std::string name = args.positional(0, "NAME");
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  auto box = store.activeBox(name);
  if (!box) throw std::runtime_error("no box named '" + name + "'");
  if (!box->providerVm.empty() && box->state != "deleted")
    throw std::runtime_error("box '" + name + "' is a rented VM: 'venues delete " + name + "' stops its meter");
  store.endBox(box->id, "removed",
               std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  ctx.out << "removed box '" << name << "'\n";
  return 0;
}

}  // namespace

void addBoxCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"box add", "NAME --host H [--port P] --user U [--key FILE] [--lab LAB]",
                      "record a machine reachable by SSH",
                      {{"--host", true, "host name or address", true},
                       {"--port", true, "SSH port (default 22)"},
                       {"--user", true, "login user", true},
                       {"--key", true, "private key file (default: ssh-agent, then ~/.ssh keys)"},
                       {"--price-per-hour", true, "USD per hour, for the meter"},
                       kLab},
                      boxAdd});
  commands.push_back({"box list", "[--lab LAB] [--json]", "recorded boxes", {kLab, {"--json", false, "print JSON"}}, boxList});
  commands.push_back({"box exec", "NAME [--accept-new] [--known-hosts FILE] -- CMD ...",
                      "run a command on a box; output streamed, its exit status returned",
                      {kLab, kAcceptNew, kKnownHosts}, boxExec});
  commands.push_back({"box push", "NAME SRC DST", "upload a file or folder over SFTP (resumes a broken upload)",
                      {kLab, kAcceptNew, kKnownHosts}, boxPush});
  commands.push_back({"box pull", "NAME SRC DST", "download a file over SFTP (resumes a broken download)",
                      {kLab, kAcceptNew, kKnownHosts}, boxPull});
  commands.push_back({"box forward", "NAME LOCAL_PORT REMOTE_PORT [--for SECONDS]",
                      "reach the box's 127.0.0.1:REMOTE_PORT at 127.0.0.1:LOCAL_PORT through SSH",
                      {kLab, kAcceptNew, kKnownHosts, {"--for", true, "stop after this many seconds (default: Ctrl-C)"}},
                      boxForward});
  commands.push_back({"box remove", "NAME [--lab LAB]", "forget a box (ends its life in the lab)", {kLab}, boxRemove});
}

}  // namespace crosslab::backends
