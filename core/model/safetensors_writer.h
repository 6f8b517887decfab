#pragma once
// safetensors writer: header padded with spaces to a multiple of 8, `__metadata__`
// supported, written to a temporary file and renamed so a crash leaves no half file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/model/dtype.h"

namespace crosslab::model {

struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // numel × dtypeSize bytes, little-endian
  size_t bytes = 0;
};

// Tensors are laid out in the order given. Throws std::runtime_error (and leaves no file
// behind) on a size mismatch, a duplicate name or an I/O error.
void writeSafetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Writes `text` to `path` through a temporary file + rename.
void writeFileAtomically(const std::filesystem::path& path, const std::string& text);

}  // namespace crosslab::model
