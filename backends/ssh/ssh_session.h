#pragma once
// One SSH connection to a box (libssh): host-key verification against a known_hosts
// file, public-key auth (key file or ssh-agent), exec with streamed output and exit
// status, SFTP upload/download with progress and resume, keepalive and reconnect.
// Qt-free. Not thread-safe: one SshSession per thread (libssh sessions are not shared).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

struct ssh_session_struct;

namespace crosslab::ssh {

class SshError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The host key was not in known_hosts (and accept-new was off) or differs from it.
class HostKeyError : public SshError {
 public:
  HostKeyError(const std::string& what, std::string fingerprint = {}, bool changed = false)
      : SshError(what), fingerprint_(std::move(fingerprint)), changed_(changed) {}
  // "ssh-ed25519 SHA256:…", what the server presented.
  const std::string& fingerprint() const { return fingerprint_; }
  // true: known_hosts holds another key for this host (never accepted); false: unknown host.
  bool changed() const { return changed_; }

 private:
  std::string fingerprint_;
  bool changed_;
};

// A cancelled exec. The command's process group on the box was ended (ended() true), or
// could not be (the message says why and that it may still run).
class ExecCancelled : public SshError {
 public:
  ExecCancelled(const std::string& what, bool ended) : SshError(what), ended_(ended) {}
  bool ended() const { return ended_; }

 private:
  bool ended_;
};

struct SshTarget {
  std::string host;
  int port = 22;
  std::string user;
  std::string keyFile;     // empty: ssh-agent, then the user's default keys
  std::string knownHosts;  // file to verify against and to append accepted keys to
  bool acceptNew = false;  // unknown host: add it (a CHANGED key is refused regardless)
  int timeoutSeconds = 15;
  // Asked for a key passphrase when the key is encrypted; the answer is copied into
  // libssh and wiped, never stored. May throw (no terminal, cancelled): the message is
  // reported as "key FILE is encrypted: …". A wrong answer: "wrong passphrase for key FILE".
  std::function<std::string(const std::string& prompt)> askPassphrase;
};

struct ExecResult {
  int status = -1;
  std::string out;
  std::string err;
};

// bytesDone / bytesTotal of a transfer, including bytes a resumed transfer skipped.
using ProgressFn = std::function<void(std::uint64_t done, std::uint64_t total)>;
using ChunkFn = std::function<void(const char* data, std::size_t size)>;

class SshSession {
 public:
  explicit SshSession(SshTarget target);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  // Connects, verifies the host key, authenticates. Throws HostKeyError / SshError.
  void connect();
  bool isConnected() const;
  void disconnect();
  // Connects again when the connection dropped (server restart, network blip).
  void ensureConnected();
  // SSH_MSG_IGNORE so NATs and idle timeouts keep the connection; false when it is gone.
  bool keepalive();
  const SshTarget& target() const { return target_; }
  // The server's host key as "ssh-ed25519 SHA256:…" (for display before accepting).
  std::string hostKeyFingerprint() const { return fingerprint_; }
  // The libssh session, for PortForward's channels (same thread only).
  ssh_session_struct* handle();

  // Runs `command` through the remote shell; output chunks go to the sinks as they come.
  // Returns the exit status (-1 if the command was killed by a signal). With `cancel`,
  // the command runs in its own process group; setting the flag ends that group on the
  // box (TERM, then KILL) and throws ExecCancelled saying whether it is gone.
  int exec(const std::string& command, const ChunkFn& onStdout, const ChunkFn& onStderr,
           const std::atomic<bool>* cancel = nullptr);
  ExecResult run(const std::string& command);

  // SFTP. The file is written as DST.part and renamed into place when complete, so a
  // broken transfer never leaves a half file under the real name; `resume` continues
  // an existing DST.part.
  void upload(const std::string& localPath, const std::string& remotePath, const ProgressFn& progress = {},
              bool resume = true, const std::atomic<bool>* cancel = nullptr);
  void download(const std::string& remotePath, const std::string& localPath, const ProgressFn& progress = {},
                bool resume = true, const std::atomic<bool>* cancel = nullptr);

 private:
  struct Impl;
  // Ends process group `pgid` on the box; "" when it is gone, else why not.
  std::string endProcessGroup(long pgid);
  void verifyHostKey();
  void authenticate();
  SshTarget target_;
  std::unique_ptr<Impl> impl_;
  std::string fingerprint_;
};

// True when the private key file is encrypted (opening it would ask for a passphrase).
// Cheap: stops at the passphrase request, before any key derivation.
bool keyIsEncrypted(const std::string& keyFile);
// Overwrites a secret in place (not optimised away) and empties it.
void wipe(std::string& secret);

// Single-quotes `s` for a POSIX shell.
std::string shellQuote(const std::string& s);

}  // namespace crosslab::ssh
