#include "cli/venue_support.h"

#include "backends/remote/box_access.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "backends/lab_locations.h"
#include "backends/secrets/keyring.h"

namespace crosslab::backends {

store::LabStore openVenueLab(const cli::Args& args) {
  if (auto lab = args.value("--lab")) return store::LabStore::open(*lab);
  const std::string home = (crosslabHome() + "/home").toStdString();
  if (!store::LabStore::isLab(home)) return store::LabStore::create(home, "home");
  return store::LabStore::open(home);
}

std::string apiKeyFrom(const cli::Args& args, const std::string& defaultVar, const std::string& keyringName) {
  const std::string var = args.value("--api-key-env").value_or(defaultVar);
  if (const char* key = std::getenv(var.c_str()); key && *key) return key;
  if (args.has("--api-key-env")) throw std::runtime_error("no API key: " + var + " is not set");
  // Not in the environment: the OS keyring, where one runs.
  const auto r = secrets::readSecret(QString::fromStdString(keyringName));
  if (r.ok) return r.value.toStdString();
  throw std::runtime_error("no API key: set " + var + ", name a variable with --api-key-env, or store it with "
                           "'crosslab-cli secrets set " + keyringName + "' (" + r.error.toStdString() + ")");
}

providers::HotAisleOptions hotAisleBounds(const cli::Args& args) {
  providers::HotAisleOptions o;
  if (args.has("--provider-timeout")) {
    const double s = args.number("--provider-timeout", 90, 1, 3600);
    o.deadlineMs = static_cast<int>(s * 1000);
    o.timeoutMs = std::min(o.timeoutMs, o.deadlineMs);
  }
  return o;
}

providers::HotAisleOptions hotAisleOptions(const cli::Args& args) {
  const std::string provider = args.value("--provider").value_or("hotaisle");
  if (provider != "hotaisle") throw cli::UsageError("unknown provider '" + provider + "' (known: hotaisle)");
  providers::HotAisleOptions o = hotAisleBounds(args);
  if (auto url = args.value("--api-url")) o.baseUrl = QString::fromStdString(*url);
  else if (const char* env = std::getenv("HOTAISLE_API_URL"); env && *env) o.baseUrl = QString::fromUtf8(env);
  if (auto team = args.value("--team")) o.team = QString::fromStdString(*team);
  o.apiKey = QString::fromStdString(apiKeyFrom(args, "HOTAISLE_API_KEY", "hotaisle-api-key"));
  return o;
}

venues::BoxRow requireBox(venues::VenueStore& venues, const std::string& name) {
  auto box = venues.activeBox(name);
  if (!box) throw std::runtime_error("no box named '" + name + "' (see 'crosslab-cli box list')");
  if (box->host.empty()) throw std::runtime_error("box '" + name + "' has no address yet (state " + box->state + ")");
  return *box;
}

namespace {

constexpr size_t kMaxPassphrase = 1024;

// One line from `fd`, a byte at a time so nothing after the newline is consumed; at most
// kMaxPassphrase bytes (a descriptor holding a file, not a passphrase, is not read whole).
std::string readLine(int fd) {
  std::string line;
  line.reserve(kMaxPassphrase + 1);  // no reallocation leaving copies of a passphrase behind
  char c = 0;
  while (line.size() <= kMaxPassphrase && ::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  if (line.size() > kMaxPassphrase)
    throw std::runtime_error("CROSSLAB_SSH_PASSPHRASE_FD: no passphrase line within " + std::to_string(kMaxPassphrase) +
                             " bytes");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// What takePassphraseDescriptor() found: the inherited descriptor, or why there is none.
struct PassphraseDescriptor {
  bool taken = false;  // takePassphraseDescriptor() ran
  int fd = -1;
  std::string problem;  // set when the variable names something unusable
};
PassphraseDescriptor gPassphraseFd;

}  // namespace

void takePassphraseDescriptor() {
  gPassphraseFd = {};
  gPassphraseFd.taken = true;
  const char* fdText = std::getenv("CROSSLAB_SSH_PASSPHRASE_FD");
  if (!fdText || !*fdText) return;
  const std::string name = std::string("CROSSLAB_SSH_PASSPHRASE_FD=") + fdText;
  char* end = nullptr;
  errno = 0;
  const long fd = std::strtol(fdText, &end, 10);
  if (*end != '\0' || errno != 0 || fd < 0 || fd > 1 << 20) {
    gPassphraseFd.problem = name + " is not a descriptor number";
    return;
  }
  const int flags = fcntl(static_cast<int>(fd), F_GETFD);
  if (flags < 0) {
    gPassphraseFd.problem = name + " is not a descriptor crosslab-cli was given (not open at start-up)";
    return;
  }
  if (fd > 2) fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
  gPassphraseFd.fd = static_cast<int>(fd);
}

std::string askPassphraseOnTerminal(const std::string& prompt) {
  // Scripts and CI: a descriptor the caller opened (e.g. CROSSLAB_SSH_PASSPHRASE_FD=3 3<file),
  // taken at start-up; never one crosslab opened itself.
  if (const char* fdText = std::getenv("CROSSLAB_SSH_PASSPHRASE_FD"); fdText && *fdText) {
    if (!gPassphraseFd.taken)
      throw std::runtime_error("CROSSLAB_SSH_PASSPHRASE_FD is read at crosslab-cli's start-up only");
    if (!gPassphraseFd.problem.empty()) throw std::runtime_error(gPassphraseFd.problem);
    return readLine(gPassphraseFd.fd);
  }
  // Interactive: the controlling terminal, echo off (stdin may be a pipe of data).
  const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0)
    throw std::runtime_error("no terminal to ask for its passphrase; load the key into ssh-agent or set "
                             "CROSSLAB_SSH_PASSPHRASE_FD to a descriptor that holds it");
  const std::string ask = prompt + ": ";
  if (::write(tty, ask.data(), ask.size()) < 0) {}  // best effort: the read still works
  termios saved{};
  const bool isTty = tcgetattr(tty, &saved) == 0;
  if (isTty) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(tty, TCSAFLUSH, &quiet);
  }
  std::string answer = readLine(tty);
  if (isTty) tcsetattr(tty, TCSAFLUSH, &saved);
  if (::write(tty, "\n", 1) < 0) {}
  ::close(tty);
  return answer;
}

ssh::SshTarget sshTargetFor(const venues::BoxRow& box, const cli::Args& args) {
  ssh::SshTarget t = remote::boxTarget(box, args.value("--known-hosts").value_or(""), args.has("--accept-new"));
  t.askPassphrase = [key = box.keyFile](const std::string&) { return askPassphraseOnTerminal("Passphrase for " + key); };
  return t;
}



venues::SecretGuard secretGuard() { return secrets::outgoingGuard(); }

}  // namespace crosslab::backends
