// crosslab-cli box …: any machine reachable by SSH (a rented VM, a workstation, a DGX
// Spark, a Mac): add, list, exec, push, pull, forward, remove.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <thread>

#include "cli/venue_support.h"
#include "cli/commands.h"
#include "backends/ssh/port_forward.h"
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

// "12.3 MB/s" progress on stderr, at most a few times a second.
ssh::ProgressFn progressPrinter(std::ostream& err, const std::string& label) {
  auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  auto first = std::make_shared<std::uint64_t>(UINT64_MAX);
  return [&err, label, start, last, first](std::uint64_t done, std::uint64_t total) {
    if (*first == UINT64_MAX) *first = done;  // bytes skipped by a resume do not count toward the rate
    const auto now = std::chrono::steady_clock::now();
    if (done != total && now - *last < std::chrono::milliseconds(250)) return;
    *last = now;
    const double s = std::chrono::duration<double>(now - *start).count();
    const double mbps = s > 0 ? (done - *first) / 1e6 / s : 0;
    err << "\r" << label << "  " << done << "/" << total << " bytes  " << std::fixed << std::setprecision(1) << mbps
        << " MB/s" << (done == total ? "\n" : "") << std::flush;
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
  if (!fs::is_directory(src)) {
    session.upload(src, dst, progressPrinter(ctx.err, src));
    return 0;
  }
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
  }
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
  session.download(src, dst, progressPrinter(ctx.err, src));
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
                      {{"--host", true, "host name or address"},
                       {"--port", true, "SSH port (default 22)"},
                       {"--user", true, "login user"},
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
