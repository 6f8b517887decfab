#pragma once
// safetensors reader: parses and validates the header exactly as the reference reader does
// (see shared/reference/interfaces.md), then hands out tensors as views into a memory map.
//
// Layout: u64 little-endian N | N bytes UTF-8 JSON header | data buffer.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model/dtype.h"
#include "core/model/mapped_file.h"

namespace crosslab::model {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data buffer, [begin, end)
  uint64_t end = 0;
  int64_t numel() const;
  uint64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in data-offset order
  std::map<std::string, std::string> metadata;
  uint64_t dataStart = 0;  // 8 + N
};

// Validates `size` bytes (the whole file) and returns the header. Throws SafetensorsError
// with a one-line reason. Never reads past data[size).
SafetensorsHeader parseSafetensors(const uint8_t* data, size_t size);

// A non-owning view of one tensor's bytes inside a mapped file.
struct TensorView {
  const TensorInfo* info = nullptr;
  const uint8_t* data = nullptr;
};

class SafetensorsFile {
 public:
  // Maps and validates the file; errors are prefixed with the file name.
  explicit SafetensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  // nullptr when absent.
  const TensorInfo* find(const std::string& name) const;
  TensorView view(const TensorInfo& info) const;
  // True when [p, p + n) lies inside this file's map.
  bool maps(const void* p, size_t n) const;

 private:
  std::filesystem::path path_;
  MappedFile map_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;
};

}  // namespace crosslab::model
