#include "core/model/checkpoint_files.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <stdexcept>

namespace crosslab::model {
namespace {

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

// weight_map of the index: tensor name -> shard file name.
std::map<std::string, std::string> readIndex(const std::filesystem::path& path) {
  std::ifstream in(path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception&) {
    throw std::runtime_error(std::string(kIndex) + ": not valid JSON");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw std::runtime_error(std::string(kIndex) + ": missing 'weight_map'");
  std::map<std::string, std::string> map;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) throw std::runtime_error(std::string(kIndex) + ": weight_map values must be strings");
    const std::string file = it.value().get<std::string>();
    if (file.find('/') != std::string::npos || file == "..")
      throw std::runtime_error(std::string(kIndex) + ": shard '" + file + "' is not a plain file name");
    map[it.key()] = file;
  }
  return map;
}

}  // namespace

CheckpointFiles CheckpointFiles::open(const std::filesystem::path& dir) {
  CheckpointFiles ck;
  if (std::filesystem::exists(dir / kSingle)) {
    ck.files_.push_back(std::make_unique<SafetensorsFile>(dir / kSingle));
    for (const auto& t : ck.files_[0]->header().tensors) ck.byName_[t.name] = {ck.files_[0].get(), &t};
    return ck;
  }
  if (!std::filesystem::exists(dir / kIndex))
    throw std::runtime_error(dir.string() + ": no " + kSingle + " and no " + kIndex);
  const auto weightMap = readIndex(dir / kIndex);
  std::map<std::string, const SafetensorsFile*> shards;
  for (const auto& [name, file] : weightMap) {
    if (shards.count(file)) continue;
    if (!std::filesystem::exists(dir / file))
      throw std::runtime_error("missing shard '" + file + "' named in " + kIndex);
    ck.files_.push_back(std::make_unique<SafetensorsFile>(dir / file));
    shards[file] = ck.files_.back().get();
  }
  for (const auto& [name, file] : weightMap) {
    const SafetensorsFile* shard = shards[file];
    const TensorInfo* info = shard->find(name);
    if (!info) throw std::runtime_error("tensor '" + name + "' is not in shard '" + file + "' as " + kIndex + " says");
    ck.byName_[name] = {shard, info};
  }
  return ck;
}

TensorView CheckpointFiles::find(const std::string& name) const {
  const auto it = byName_.find(name);
  if (it == byName_.end()) return {};
  return it->second.first->view(*it->second.second);
}

std::vector<std::string> CheckpointFiles::names() const {
  std::vector<std::string> out;
  for (const auto& kv : byName_) out.push_back(kv.first);
  return out;
}

std::vector<std::filesystem::path> CheckpointFiles::files() const {
  std::vector<std::filesystem::path> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

bool CheckpointFiles::maps(const void* p, size_t n) const {
  for (const auto& f : files_)
    if (f->maps(p, n)) return true;
  return false;
}

uint64_t CheckpointFiles::totalBytes() const {
  uint64_t n = 0;
  for (const auto& kv : byName_) n += kv.second.second->bytes();
  return n;
}

}  // namespace crosslab::model
