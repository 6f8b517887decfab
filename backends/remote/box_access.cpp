#include "backends/remote/box_access.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "backends/lab_locations.h"
#include "backends/secrets/keyring.h"
#include "core/util/sha256.h"

namespace fs = std::filesystem;

namespace crosslab::remote {
namespace {

using venues::Finding;
using Level = venues::Finding::Level;

std::string gb(double bytes) {
  std::ostringstream s;
  s.precision(3);
  s << bytes / 1e9 << " GB";
  return s.str();
}

// Sizes of the files under `remoteDir` on the host, by relative path (empty when absent).
std::map<std::string, std::uint64_t> remoteSizes(ShellHost& host, const std::string& remoteDir) {
  std::map<std::string, std::uint64_t> out;
  const auto r = host.run("cd " + ssh::shellQuote(remoteDir) + " 2>/dev/null && find . -type f -exec wc -c {} + 2>/dev/null");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ls(line);
    std::uint64_t size = 0;
    std::string name;
    if (!(ls >> size >> name) || name == "total") continue;
    if (name.rfind("./", 0) == 0) name = name.substr(2);
    out[name] = size;
  }
  return out;
}

std::map<std::string, std::uint64_t> localSizes(const fs::path& dir) {
  std::map<std::string, std::uint64_t> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) out[fs::relative(e.path(), dir).string()] = e.file_size(ec);
  return out;
}

}  // namespace

ssh::SshTarget boxTarget(const venues::BoxRow& box, const std::string& knownHosts, bool acceptNew) {
  ssh::SshTarget t;
  t.host = box.host;
  t.port = box.port;
  t.user = box.user;
  t.keyFile = box.keyFile;
  t.knownHosts = knownHosts.empty() ? (backends::crosslabHome() + "/known_hosts").toStdString() : knownHosts;
  t.acceptNew = acceptNew;
  return t;
}

std::optional<double> gpuMemoryGb(ShellHost& s) {
  auto r = s.run("nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1");
  if (r.status == 0 && !r.out.empty() && std::isdigit(static_cast<unsigned char>(r.out[0])))
    return std::stod(r.out) * 1.048576e6 / 1e9;  // MiB
  r = s.run("rocm-smi --showmeminfo vram --csv 2>/dev/null | sed -n 2p | cut -d, -f2");
  if (r.status == 0 && !r.out.empty() && std::isdigit(static_cast<unsigned char>(r.out[0]))) return std::stod(r.out) / 1e9;
  return std::nullopt;
}

std::uint64_t folderBytes(const fs::path& dir) {
  std::uint64_t total = 0;
  for (const auto& [name, size] : localSizes(dir)) total += size;
  return total;
}

BoxPreflight preflightOnBox(ShellHost& box, const fs::path& model, const train::Recipe& recipe, bool needTokenizerConfig,
                            const std::string& modelOnBox, const std::string& workDir, const fs::path& stage,
                            const std::string& command, std::optional<double> gpuMemoryOverride) {
  BoxPreflight out;
  auto& report = out.report;
  venues::checkModelFolder(model, report, needTokenizerConfig);
  // Hashes: what will run on the box is exactly this.
  const auto local = localSizes(model);
  std::string hashes;
  for (const auto& [name, size] : local) hashes += (hashes.empty() ? "" : ", ") + name + " " + util::sha256File(model / name).substr(0, 12);
  report.add(Level::Ok, "weights", "hashed (SHA-256): " + hashes);
  // Already on the box?
  const auto there = remoteSizes(box, modelOnBox);
  for (const auto& [name, size] : local) {
    const auto it = there.find(name);
    if (it == there.end() || it->second != size) out.bytesToPush += size;
  }
  out.weightsOnBox = out.bytesToPush == 0;
  report.add(Level::Ok, "weights",
             out.weightsOnBox ? "already on " + box.label() + " at " + modelOnBox
                              : gb(double(out.bytesToPush)) + " to push to " + box.label() + ":" + modelOnBox);
  // Fit.
  std::optional<double> mem = gpuMemoryOverride ? gpuMemoryOverride : gpuMemoryGb(box);
  std::ifstream cin(model / "config.json");
  const auto config = nlohmann::json::parse(cin, nullptr, false);
  if (!mem) report.add(Level::Warning, "fit", "GPU memory of " + box.label() + " unknown (no nvidia-smi or rocm-smi)");
  else if (!config.is_discarded()) venues::checkFit(config, recipe, recipe.devices, *mem, std::nullopt, report);
  // Disk: the weights to push, plus room for checkpoints and the adapter (10%).
  const auto df = box.run("mkdir -p " + ssh::shellQuote(workDir) + " && df -Pk " + ssh::shellQuote(workDir));
  if (const auto avail = venues::parseDfAvailable(df.out))
    venues::checkDisk(*avail, out.bytesToPush + folderBytes(model) / 10, report);
  else report.add(Level::Warning, "disk", "could not read free space on " + box.label());
  // Secrets: nothing that leaves this machine may hold one.
  try {
    const auto guard = secrets::outgoingGuard();
    guard.checkPath(stage);
    guard.checkText(command, "the launch command");
    report.add(Level::Ok, "secrets", "no secret in the staged files or the command");
  } catch (const venues::SecretLeak& e) {
    report.add(Level::Error, "secrets", e.what());
  }
  return out;
}

std::uint64_t pushModel(ssh::SshSession& session, const fs::path& model, const std::string& remoteDir,
                        const ssh::ProgressFn& progress, const std::atomic<bool>* cancel) {
  SshShell host(session, session.target().host);
  const auto local = localSizes(model);
  const auto there = remoteSizes(host, remoteDir);
  std::uint64_t total = 0, done = 0, sent = 0;
  for (const auto& [name, size] : local) total += size;
  const auto mk = host.run("mkdir -p " + ssh::shellQuote(remoteDir));
  if (mk.status != 0) throw ssh::SshError("cannot create " + remoteDir + " on the box: " + mk.err);
  for (const auto& [name, size] : local) {
    const auto it = there.find(name);
    const std::string remote = remoteDir + "/" + name;
    if (it == there.end() || it->second != size) {
      const auto parent = fs::path(remote).parent_path().string();
      host.run("mkdir -p " + ssh::shellQuote(parent));
      const std::uint64_t base = done;
      session.upload((model / name).string(), remote,
                     [&](std::uint64_t d, std::uint64_t) {
                       if (progress) progress(base + d, total);
                     },
                     true, cancel);
      sent += size;
    }
    done += size;
    if (progress) progress(done, total);
  }
  // Both ends hash the same bytes, or the run would train on something else.
  std::string names;
  for (const auto& [name, size] : local) names += " " + ssh::shellQuote(name);
  const auto r = host.run("cd " + ssh::shellQuote(remoteDir) + " && if command -v sha256sum >/dev/null 2>&1; then sha256sum" + names + "; else shasum -a 256" + names + "; fi");
  if (r.status != 0) throw ssh::SshError("cannot hash the weights on the box: " + r.err);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ls(line);
    std::string hex, name;
    if (!(ls >> hex >> name)) continue;
    if (hex != util::sha256File(model / name)) throw std::runtime_error(name + " differs on the box after the push (SHA-256)");
  }
  return sent;
}

void uploadFolder(ssh::SshSession& session, const fs::path& stage, const std::string& workDir) {
  const auto r = session.run("mkdir -p " + ssh::shellQuote(workDir));
  if (r.status != 0) throw ssh::SshError("cannot create " + workDir + " on the box: " + r.err);
  for (const auto& e : fs::recursive_directory_iterator(stage)) {
    const std::string remote = workDir + "/" + fs::relative(e.path(), stage).string();
    if (e.is_directory()) {
      session.run("mkdir -p " + ssh::shellQuote(remote));
      continue;
    }
    session.upload(e.path().string(), remote);
  }
}

}  // namespace crosslab::remote
