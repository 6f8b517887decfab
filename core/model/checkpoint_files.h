#pragma once
// The weight files of a Hugging Face checkpoint folder: `model.safetensors`, or the shards
// named by `model.safetensors.index.json`. Maps every tensor name to its file.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model/safetensors.h"

namespace crosslab::model {

class CheckpointFiles {
 public:
  // Throws std::runtime_error naming the missing/invalid file (a missing shard names it).
  static CheckpointFiles open(const std::filesystem::path& dir);

  // nullptr info when the tensor is absent.
  TensorView find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::vector<std::filesystem::path> files() const;
  uint64_t totalBytes() const;
  // True when [p, p + n) lies inside one of the files' maps (a tensor used from the file).
  bool maps(const void* p, size_t n) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::pair<const SafetensorsFile*, const TensorInfo*>> byName_;
};

}  // namespace crosslab::model
