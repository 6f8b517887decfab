#include "backends/ssh/ssh_session.h"

#include <libssh/libssh.h>
#include <libssh/sftp.h>
#include <fcntl.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace fs = std::filesystem;

namespace crosslab::ssh {
namespace {

constexpr std::size_t kSftpChunk = 32 * 1024;  // OpenSSH's sftp-server caps reads/writes near here

std::string where(const SshTarget& t) { return t.user + "@" + t.host + ":" + std::to_string(t.port); }

// What the passphrase callback saw, for a clear error when the key does not open.
struct PassphraseAsk {
  const SshTarget* target = nullptr;
  bool asked = false;
  std::string failure;  // the asker's own error (no terminal, cancelled, …)
};

// libssh's passphrase callback: copies the user's answer into libssh's buffer (libssh
// wipes it after use) and wipes our copy. An asker that throws (no terminal, cancelled)
// must not unwind through C: its message is kept and libssh is told "no passphrase".
int passphraseCallback(const char* prompt, char* buf, size_t len, int /*echo*/, int /*verify*/, void* userdata) {
  auto* ask = static_cast<PassphraseAsk*>(userdata);
  ask->asked = true;
  if (!ask->target->askPassphrase) return -1;
  std::string answer;
  try {
    answer = ask->target->askPassphrase(prompt ? prompt : "passphrase");
  } catch (const std::exception& e) {
    ask->failure = e.what();
    return -1;
  }
  const bool fits = answer.size() + 1 <= len;
  if (fits) std::memcpy(buf, answer.c_str(), answer.size() + 1);
  else ask->failure = "the passphrase is longer than libssh accepts (" + std::to_string(len - 1) + " bytes)";
  wipe(answer);
  return fits ? 0 : -1;
}

// Stops at the first passphrase request: the key is encrypted.
int noteEncrypted(const char*, char*, size_t, int, int, void* userdata) {
  *static_cast<bool*>(userdata) = true;
  return -1;
}

struct SftpHandle {
  sftp_session sftp = nullptr;
  ~SftpHandle() {
    if (sftp) sftp_free(sftp);
  }
};

struct SftpFile {
  sftp_file file = nullptr;
  ~SftpFile() {
    if (file) sftp_close(file);
  }
};

void checkCancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw SshError("transfer cancelled");
}

}  // namespace

struct SshSession::Impl {
  ssh_session session = nullptr;
  ~Impl() { close(); }
  void close() {
    if (!session) return;
    if (ssh_is_connected(session)) ssh_disconnect(session);
    ssh_free(session);
    session = nullptr;
  }
  std::string error() const { return session ? ssh_get_error(session) : "not connected"; }
  void openSftp(SftpHandle& h) {
    h.sftp = sftp_new(session);
    if (!h.sftp || sftp_init(h.sftp) != SSH_OK) throw SshError("SFTP is not available on the box: " + error());
  }
};

SshSession::SshSession(SshTarget target) : target_(std::move(target)), impl_(std::make_unique<Impl>()) {}
SshSession::~SshSession() = default;

void SshSession::connect() {
  impl_->close();
  if (target_.host.empty() || target_.user.empty()) throw SshError("a box needs a host and a user");
  ssh_session s = ssh_new();
  if (!s) throw SshError("libssh could not create a session");
  impl_->session = s;
  long timeout = target_.timeoutSeconds;
  bool processConfig = false;  // ~/.ssh/config must not redirect where we connect
  int noDelay = 1;             // SFTP is request/response: Nagle + delayed ACK costs ~40 ms per chunk
  ssh_options_set(s, SSH_OPTIONS_HOST, target_.host.c_str());
  ssh_options_set(s, SSH_OPTIONS_PORT, &target_.port);
  ssh_options_set(s, SSH_OPTIONS_USER, target_.user.c_str());
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &processConfig);
  ssh_options_set(s, SSH_OPTIONS_NODELAY, &noDelay);
  ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
  if (!target_.knownHosts.empty()) ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, target_.knownHosts.c_str());
  if (ssh_connect(s) != SSH_OK) {
    const std::string why = impl_->error();
    impl_->close();
    throw SshError("cannot connect to " + where(target_) + ": " + why);
  }
  try {
    verifyHostKey();
    authenticate();
  } catch (...) {
    impl_->close();
    throw;
  }
}

void SshSession::verifyHostKey() {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(impl_->session, &key) != SSH_OK) throw SshError("the server sent no host key");
  unsigned char* hash = nullptr;
  size_t hashLen = 0;
  const int rc = ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hashLen);
  const std::string type = ssh_key_type_to_char(ssh_key_type(key));
  ssh_key_free(key);
  if (rc != 0) throw SshError("cannot hash the host key");
  char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hashLen);
  fingerprint_ = type + " " + (fp ? fp : "?");
  ssh_string_free_char(fp);
  ssh_clean_pubkey_hash(&hash);

  const std::string file = target_.knownHosts.empty() ? "~/.ssh/known_hosts" : target_.knownHosts;
  switch (ssh_session_is_known_server(impl_->session)) {
    case SSH_KNOWN_HOSTS_OK:
      return;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      // Never accepted, whatever the flags: a changed key is a possible man in the middle.
      throw HostKeyError("host key of " + where(target_) + " CHANGED (now " + fingerprint_ +
                             "); refusing. If the box was rebuilt, remove its line from " + file,
                         fingerprint_, true);
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
      if (!target_.acceptNew)
        throw HostKeyError("unknown host key for " + where(target_) + " (" + fingerprint_ +
                               "); refusing. Check it and rerun with --accept-new to trust it",
                           fingerprint_, false);
      if (!target_.knownHosts.empty()) {
        std::error_code ec;
        fs::create_directories(fs::path(target_.knownHosts).parent_path(), ec);
      }
      if (ssh_session_update_known_hosts(impl_->session) != SSH_OK)
        throw SshError("cannot record the host key in " + file + ": " + impl_->error());
      return;
    case SSH_KNOWN_HOSTS_ERROR:
    default:
      throw SshError("cannot check the host key against " + file + ": " + impl_->error());
  }
}

void SshSession::authenticate() {
  int rc = SSH_AUTH_DENIED;
  if (!target_.keyFile.empty()) {
    ssh_key key = nullptr;
    PassphraseAsk ask;
    ask.target = &target_;
    if (ssh_pki_import_privkey_file(target_.keyFile.c_str(), nullptr, passphraseCallback, &ask, &key) != SSH_OK) {
      const std::string& k = target_.keyFile;
      if (!fs::is_regular_file(k)) throw SshError("no private key at " + k);
      if (!ask.failure.empty()) throw SshError("key " + k + " is encrypted: " + ask.failure);
      if (ask.asked && !target_.askPassphrase)
        throw SshError("key " + k + " is encrypted and nothing can ask for its passphrase (load it into ssh-agent)");
      if (ask.asked) throw SshError("wrong passphrase for key " + k);
      throw SshError("cannot read private key " + k + " (not a key libssh can read)");
    }
    rc = ssh_userauth_publickey(impl_->session, nullptr, key);
    ssh_key_free(key);
  } else {
    if (std::getenv("SSH_AUTH_SOCK")) rc = ssh_userauth_agent(impl_->session, nullptr);
    if (rc != SSH_AUTH_SUCCESS) rc = ssh_userauth_publickey_auto(impl_->session, nullptr, nullptr);
  }
  if (rc != SSH_AUTH_SUCCESS)
    throw SshError("authentication failed for " + where(target_) + " (public key refused)");
}

ssh_session_struct* SshSession::handle() { return impl_->session; }

bool SshSession::isConnected() const { return impl_->session && ssh_is_connected(impl_->session); }

void SshSession::disconnect() { impl_->close(); }

void SshSession::ensureConnected() {
  if (!isConnected()) connect();
}

bool SshSession::keepalive() {
  if (!isConnected()) return false;
  return ssh_send_ignore(impl_->session, "keepalive") == SSH_OK && ssh_is_connected(impl_->session);
}

namespace {

// A cancellable command announces its process group on stderr before it starts, framed
// so it cannot be mistaken for output: RS "crosslab-pgid N" LF, or "none" when the remote
// shell is not a process-group leader (sshd makes it one: it calls setsid() for every
// session). The announcement is taken out of the stream.
constexpr char kMarkStart = '\036';
const std::string kMarkTag = "crosslab-pgid ";

std::string groupWrapped(const std::string& command) {
  const std::string script =
      "if kill -0 -$$ 2>/dev/null; then printf '\\036crosslab-pgid %s\\n' $$ >&2; "
      "else printf '\\036crosslab-pgid none\\n' >&2; fi; eval \"$1\"";
  return "exec sh -c " + shellQuote(script) + " crosslab-exec " + shellQuote(command);
}

// Strips the announcement from the first stderr bytes; -1 until known, 0 for "none".
struct GroupMark {
  bool done = false;
  long pgid = -1;
  std::string pending;
  // Returns the bytes that are output (after the announcement).
  std::string feed(const char* d, std::size_t n) {
    if (done) return std::string(d, n);
    pending.append(d, n);
    if (pending[0] != kMarkStart) return finish(pending);
    const auto nl = pending.find('\n');
    if (nl == std::string::npos) return pending.size() > 64 ? finish(pending) : std::string();
    const std::string mark = pending.substr(1, nl - 1);
    if (mark.rfind(kMarkTag, 0) == 0) {
      const std::string id = mark.substr(kMarkTag.size());
      pgid = id == "none" ? 0 : std::strtol(id.c_str(), nullptr, 10);
      return finish(pending.substr(nl + 1));
    }
    return finish(pending);
  }
  std::string finish(std::string rest) {
    done = true;
    pending.clear();
    return rest;
  }
};

}  // namespace

int SshSession::exec(const std::string& command, const ChunkFn& onStdout, const ChunkFn& onStderr,
                     const std::atomic<bool>* cancel) {
  ensureConnected();
  ssh_channel ch = ssh_channel_new(impl_->session);
  if (ch && ssh_channel_open_session(ch) != SSH_OK) {
    // The connection may have dropped since the last call: reconnect once and retry.
    ssh_channel_free(ch);
    connect();
    ch = ssh_channel_new(impl_->session);
    if (ch && ssh_channel_open_session(ch) != SSH_OK) {
      ssh_channel_free(ch);
      ch = nullptr;
    }
  }
  if (!ch) throw SshError("cannot open a channel on " + where(target_) + ": " + impl_->error());
  const std::string sent = cancel ? groupWrapped(command) : command;
  if (ssh_channel_request_exec(ch, sent.c_str()) != SSH_OK) {
    ssh_channel_free(ch);
    throw SshError("the box refused to run the command: " + impl_->error());
  }
  GroupMark mark;
  mark.done = cancel == nullptr;
  auto toStderr = [&](const char* d, std::size_t n) {
    const std::string out = mark.feed(d, n);
    if (!out.empty() && onStderr) onStderr(out.data(), out.size());
  };
  std::vector<char> buf(16384);
  bool cancelled = false;
  for (;;) {
    if (cancel && cancel->load()) {
      cancelled = true;
      break;
    }
    const int n = ssh_channel_read_timeout(ch, buf.data(), static_cast<uint32_t>(buf.size()), 0, 100);
    if (n == SSH_ERROR) {
      ssh_channel_free(ch);
      throw SshError("connection to " + where(target_) + " lost during the command");
    }
    if (n > 0 && onStdout) onStdout(buf.data(), static_cast<std::size_t>(n));
    int m = 0;
    while ((m = ssh_channel_read_nonblocking(ch, buf.data(), static_cast<uint32_t>(buf.size()), 1)) > 0)
      toStderr(buf.data(), static_cast<std::size_t>(m));
    if (n == 0 && ssh_channel_is_eof(ch)) break;
  }
  int status = -1;
  if (!cancelled) {
    ssh_channel_send_eof(ch);
    status = ssh_channel_get_exit_status(ch);
  }
  if (!mark.pending.empty() && onStderr) onStderr(mark.pending.data(), mark.pending.size());
  ssh_channel_close(ch);
  ssh_channel_free(ch);
  if (!cancelled) return status;
  // Closing the channel does not stop the command (no terminal, no SIGHUP): end its group.
  if (mark.pgid == 0)
    throw ExecCancelled("cancelled, but the command on " + where(target_) +
                            " does not run in its own process group, so it could not be ended: it may still run",
                        false);
  if (mark.pgid < 0)
    throw ExecCancelled("cancelled before the command on " + where(target_) +
                            " said which processes are its own: it may still run",
                        false);
  const std::string why = endProcessGroup(mark.pgid);
  if (!why.empty())
    throw ExecCancelled("cancelled, but the command's processes on " + where(target_) + " (process group " +
                            std::to_string(mark.pgid) + ") could not be ended: " + why + "; they may still run",
                        false);
  throw ExecCancelled("cancelled: the command's processes on " + where(target_) + " (process group " +
                          std::to_string(mark.pgid) + ") were ended",
                      true);
}

std::string SshSession::endProcessGroup(long pgid) {
  const std::string g = std::to_string(pgid);
  // TERM, up to ~2 s for it to go, then KILL; exit 0 only when nothing of the group is left.
  // (`kill -SIG -N` rather than `kill -SIG -- -N`: dash's kill takes no "--".)
  const std::string script = "kill -TERM -" + g + " 2>/dev/null; i=0; while [ $i -lt 20 ]; do kill -0 -" + g +
                             " 2>/dev/null || exit 0; sleep 0.1; i=$((i+1)); done; kill -KILL -" + g +
                             " 2>/dev/null; sleep 0.2; kill -0 -" + g + " 2>/dev/null && exit 1; exit 0";
  try {
    const auto r = run("sh -c " + shellQuote(script));
    if (r.status == 0) return {};
    return r.status == 1 ? "processes of the group survived SIGKILL" : "the kill command failed: " + r.err;
  } catch (const std::exception& e) {
    return e.what();
  }
}

ExecResult SshSession::run(const std::string& command) {
  ExecResult r;
  r.status = exec(
      command, [&](const char* d, std::size_t n) { r.out.append(d, n); },
      [&](const char* d, std::size_t n) { r.err.append(d, n); });
  return r;
}

void SshSession::upload(const std::string& localPath, const std::string& remotePath, const ProgressFn& progress,
                        bool resume, const std::atomic<bool>* cancel) {
  std::error_code ec;
  const auto total = fs::file_size(localPath, ec);
  if (ec) throw SshError("cannot read " + localPath + ": " + ec.message());
  std::ifstream in(localPath, std::ios::binary);
  if (!in) throw SshError("cannot open " + localPath);
  ensureConnected();
  SftpHandle h;
  impl_->openSftp(h);
  const std::string part = remotePath + ".part";
  std::uint64_t offset = 0;
  if (resume) {
    if (sftp_attributes a = sftp_stat(h.sftp, part.c_str())) {
      if (a->size <= total) offset = a->size;
      sftp_attributes_free(a);
    }
  }
  SftpFile f;
  f.file = sftp_open(h.sftp, part.c_str(), O_WRONLY | O_CREAT | (offset ? 0 : O_TRUNC), 0644);
  if (!f.file) throw SshError("cannot write " + part + " on the box: " + impl_->error());
  if (offset && sftp_seek64(f.file, offset) != 0) throw SshError("cannot resume " + part);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<char> buf(kSftpChunk);
  std::uint64_t done = offset;
  if (progress) progress(done, total);
  while (done < total) {
    checkCancel(cancel);
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) throw SshError(localPath + " shrank while uploading");
    if (sftp_write(f.file, buf.data(), got) != static_cast<ssize_t>(got))
      throw SshError("write to " + part + " failed (disk full on the box?): " + impl_->error());
    done += got;
    if (progress) progress(done, total);
  }
  sftp_close(f.file);
  f.file = nullptr;
  sftp_unlink(h.sftp, remotePath.c_str());  // SFTP v3 rename refuses an existing target
  if (sftp_rename(h.sftp, part.c_str(), remotePath.c_str()) != 0)
    throw SshError("cannot move " + part + " to " + remotePath + ": " + impl_->error());
}

void SshSession::download(const std::string& remotePath, const std::string& localPath, const ProgressFn& progress,
                          bool resume, const std::atomic<bool>* cancel) {
  ensureConnected();
  SftpHandle h;
  impl_->openSftp(h);
  sftp_attributes a = sftp_stat(h.sftp, remotePath.c_str());
  if (!a) throw SshError("no such file on the box: " + remotePath);
  const std::uint64_t total = a->size;
  const bool folder = a->type == SSH_FILEXFER_TYPE_DIRECTORY;
  sftp_attributes_free(a);
  if (folder) throw SshError(remotePath + " is a folder on the box, not a file");
  const std::string part = localPath + ".part";
  std::error_code ec;
  std::uint64_t offset = 0;
  if (resume && fs::exists(part, ec)) {
    const auto have = fs::file_size(part, ec);
    if (!ec && have <= total) offset = have;
  }
  SftpFile f;
  f.file = sftp_open(h.sftp, remotePath.c_str(), O_RDONLY, 0);
  if (!f.file) throw SshError("cannot read " + remotePath + " on the box: " + impl_->error());
  if (offset && sftp_seek64(f.file, offset) != 0) throw SshError("cannot resume " + remotePath);
  std::ofstream out(part, std::ios::binary | (offset ? std::ios::app : std::ios::trunc));
  if (!out) throw SshError("cannot write " + part);
  std::vector<char> buf(kSftpChunk);
  std::uint64_t done = offset;
  try {
    if (progress) progress(done, total);
    while (done < total) {
      checkCancel(cancel);
      const ssize_t n = sftp_read(f.file, buf.data(), buf.size());
      if (n < 0) throw SshError("read of " + remotePath + " failed: " + impl_->error());
      if (n == 0) break;
      out.write(buf.data(), n);
      if (!out) throw SshError("write to " + part + " failed (disk full?)");
      done += static_cast<std::uint64_t>(n);
      if (progress) progress(done, total);
    }
  } catch (...) {
    out.close();
    if (done == 0) fs::remove(part, ec);  // nothing to resume from: leave no empty .part behind
    throw;
  }
  out.close();
  if (done != total) throw SshError(remotePath + " ended early (" + std::to_string(done) + " of " +
                                    std::to_string(total) + " bytes); rerun to resume");
  fs::rename(part, localPath, ec);
  if (ec) throw SshError("cannot move " + part + " to " + localPath + ": " + ec.message());
}

std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool keyIsEncrypted(const std::string& keyFile) {
  bool encrypted = false;
  ssh_key key = nullptr;
  if (ssh_pki_import_privkey_file(keyFile.c_str(), nullptr, noteEncrypted, &encrypted, &key) == SSH_OK) ssh_key_free(key);
  return encrypted;
}

void wipe(std::string& secret) {
  if (!secret.empty()) explicit_bzero(secret.data(), secret.size());
  secret.clear();
}

}  // namespace crosslab::ssh
