#pragma once
// Reaching a recorded box and checking it before the meter runs for nothing — shared by
// the CLI's venue commands and the window's remote runs and servers.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "backends/remote/shell_host.h"
#include "backends/ssh/ssh_session.h"
#include "core/train/recipe.h"
#include "core/venues/preflight.h"
#include "core/venues/secret_guard.h"
#include "core/venues/venue_store.h"

namespace crosslab::remote {

// The SSH target of a recorded box: its key file (or ssh-agent), host keys checked
// against $CROSSLAB_HOME/known_hosts (or `knownHosts`); an unknown key is refused unless
// `acceptNew`. No passphrase prompt unless the caller sets target.askPassphrase.
ssh::SshTarget boxTarget(const venues::BoxRow& box, const std::string& knownHosts = {}, bool acceptNew = false);

// Total memory of the box's first GPU in GB (nvidia-smi, else rocm-smi), or nullopt.
std::optional<double> gpuMemoryGb(ShellHost& host);

// Bytes of every regular file under `dir`.
std::uint64_t folderBytes(const std::filesystem::path& dir);

// What to check before a run on a box starts billing: the model folder complete and every
// file hashed (SHA-256, listed), whether the weights are already at `modelOnBox` (same
// files, same sizes) or will be pushed, the fit of the recipe on the box's GPUs, its free
// disk, and no secret in the staged files or the command. `gpuMemoryOverride` replaces
// the query of the box (boxes without nvidia-smi/rocm-smi).
struct BoxPreflight {
  venues::PreflightReport report;
  bool weightsOnBox = false;           // nothing to push
  std::uint64_t bytesToPush = 0;
};
BoxPreflight preflightOnBox(ShellHost& box, const std::filesystem::path& model, const train::Recipe& recipe,
                            bool needTokenizerConfig, const std::string& modelOnBox, const std::string& workDir,
                            const std::filesystem::path& stage, const std::string& command,
                            std::optional<double> gpuMemoryOverride = std::nullopt);

// Pushes every file of `model` that is missing at `remoteDir` or differs in size (SFTP,
// resumable, progress over the whole folder), then compares SHA-256 on both ends.
// Throws naming the file on a mismatch. Returns the bytes sent.
std::uint64_t pushModel(ssh::SshSession& session, const std::filesystem::path& model, const std::string& remoteDir,
                        const ssh::ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

// Uploads every file of `stage` into `workDir` on the box.
void uploadFolder(ssh::SshSession& session, const std::filesystem::path& stage, const std::string& workDir);

}  // namespace crosslab::remote
