#include "core/venues/preflight.h"

#include "core/util/sha256.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace crosslab::venues {
namespace {

using Level = Finding::Level;

std::optional<nlohmann::json> readJson(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// Length a safetensors file must have according to its own header: 8 + N + data end.
std::optional<std::uint64_t> safetensorsExpectedSize(const fs::path& file, std::string* why) {
  std::ifstream in(file, std::ios::binary);
  unsigned char lenBytes[8];
  if (!in.read(reinterpret_cast<char*>(lenBytes), 8)) {
    *why = "shorter than a safetensors header";
    return std::nullopt;
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | lenBytes[i];  // little-endian u64
  if (n > 100'000'000) {
    *why = "header length " + std::to_string(n) + " is implausible";
    return std::nullopt;
  }
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) {
    *why = "header cut off";
    return std::nullopt;
  }
  const auto j = nlohmann::json::parse(header, nullptr, false);
  if (!j.is_object()) {
    *why = "header is not JSON";
    return std::nullopt;
  }
  std::uint64_t end = 0;
  for (const auto& [name, t] : j.items()) {
    if (name == "__metadata__" || !t.is_object() || !t.contains("data_offsets")) continue;
    end = std::max(end, t.at("data_offsets").at(1).get<std::uint64_t>());
  }
  return 8 + n + end;
}

void checkShard(const fs::path& file, PreflightReport& report) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    report.add(Level::Error, "model folder", "missing shard " + file.filename().string());
    return;
  }
  std::string why;
  const auto expected = safetensorsExpectedSize(file, &why);
  const auto actual = fs::file_size(file, ec);
  if (!expected) report.add(Level::Error, "model folder", file.filename().string() + ": " + why);
  else if (*expected != actual)
    report.add(Level::Error, "model folder",
               file.filename().string() + " is " + std::to_string(actual) + " bytes, its header says " +
                   std::to_string(*expected) + " (download cut short?)");
}

}  // namespace

bool PreflightReport::blocked() const {
  for (const auto& f : findings)
    if (f.level == Level::Error) return true;
  return false;
}

nlohmann::json PreflightReport::toJson() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : findings)
    arr.push_back({{"level", f.level == Level::Ok ? "ok" : f.level == Level::Warning ? "warning" : "error"},
                   {"check", f.check},
                   {"message", f.message}});
  return {{"blocked", blocked()}, {"findings", arr}};
}

void checkModelFolder(const fs::path& dir, PreflightReport& report, bool needTokenizerConfig) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    report.add(Level::Error, "model folder", dir.string() + " is not a folder");
    return;
  }
  if (!readJson(dir / "config.json")) report.add(Level::Error, "model folder", "config.json missing or not JSON");
  const bool fastTok = fs::is_regular_file(dir / "tokenizer.json", ec);
  const bool spTok = fs::is_regular_file(dir / "tokenizer.model", ec);
  if (!fastTok && !spTok) report.add(Level::Error, "model folder", "no tokenizer.json (or tokenizer.model)");
  if (needTokenizerConfig && !fs::is_regular_file(dir / "tokenizer_config.json", ec))
    report.add(Level::Error, "model folder", "tokenizer_config.json missing");

  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::is_regular_file(index, ec)) {
    const auto j = readJson(index);
    if (!j || !j->contains("weight_map") || !j->at("weight_map").is_object()) {
      report.add(Level::Error, "model folder", "model.safetensors.index.json has no weight_map");
      return;
    }
    std::set<std::string> shards;
    for (const auto& [tensor, file] : j->at("weight_map").items())
      if (file.is_string()) shards.insert(file.get<std::string>());
    for (const auto& s : shards) checkShard(dir / s, report);
    report.add(Level::Ok, "model folder", std::to_string(shards.size()) + " shard(s) named in the index checked");
  } else if (fs::is_regular_file(dir / "model.safetensors", ec)) {
    checkShard(dir / "model.safetensors", report);
  } else {
    report.add(Level::Error, "model folder", "no model.safetensors or model.safetensors.index.json");
  }
}


void checkProvenance(const fs::path& dir, const fs::path& hashesFile, bool allShards, PreflightReport& report) {
  std::ifstream in(hashesFile);
  if (!in) {
    report.add(Level::Error, "provenance", "cannot read " + hashesFile.string());
    return;
  }
  int checked = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string hex, name;
    if (!(ls >> hex >> name) || hex.size() != 64) continue;
    if (!name.empty() && name[0] == '*') name.erase(0, 1);  // sha256sum's binary marker
    const bool shard = name.size() > 12 && name.compare(name.size() - 12, 12, ".safetensors") == 0;
    if (shard && !allShards) continue;
    std::error_code ec;
    if (!fs::is_regular_file(dir / name, ec)) {
      report.add(Level::Error, "provenance", name + " is listed in the hashes but missing");
      continue;
    }
    for (auto& c : hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string actual = util::sha256File(dir / name);
    ++checked;
    if (actual != hex)
      report.add(Level::Error, "provenance", name + " SHA-256 " + actual.substr(0, 12) + "… differs from the reference " +
                                                 hex.substr(0, 12) + "…");
  }
  report.add(checked ? Level::Ok : Level::Warning, "provenance", std::to_string(checked) + " file(s) hashed");
}

void checkHfCache(const fs::path& hfHome, PreflightReport& report) {
  std::error_code ec;
  if (!fs::is_directory(hfHome, ec)) return;
  int foreign = 0;
  std::string example;
  for (auto it = fs::recursive_directory_iterator(hfHome, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().extension() != ".lock") continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
      ++foreign;
      if (example.empty()) example = it->path().string();
    }
  }
  if (foreign)
    report.add(Level::Warning, "hf cache",
               std::to_string(foreign) + " lock file(s) owned by another user (e.g. " + example +
                   "); downloads will block: use a fresh HF_HOME or chown the cache");
}

std::optional<fs::path> hfSnapshotPath(const fs::path& hubCache, const std::string& repoId) {
  std::string folder = "models--" + repoId;
  for (size_t p; (p = folder.find('/')) != std::string::npos;) folder.replace(p, 1, "--");
  const fs::path repo = hubCache / folder;
  std::ifstream ref(repo / "refs" / "main");
  std::string commit;
  if (ref && std::getline(ref, commit) && fs::is_directory(repo / "snapshots" / commit)) return repo / "snapshots" / commit;
  std::error_code ec;
  if (fs::is_directory(repo / "snapshots", ec))
    for (const auto& e : fs::directory_iterator(repo / "snapshots", ec)) return e.path();
  return std::nullopt;
}

}  // namespace crosslab::venues
