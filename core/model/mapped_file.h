#pragma once
// A read-only memory map of a whole file (RAII). Tensors handed out by the safetensors
// reader point into it, so weights are not copied on load.

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace crosslab::model {

class MappedFile {
 public:
  // Throws std::runtime_error naming the file when it cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace crosslab::model
