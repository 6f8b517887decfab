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

  // Hands the whole pages inside [p, p + n) back to the kernel (madvise MADV_DONTNEED):
  // once a tensor has been converted to another dtype its file pages are dead weight in
  // the resident set. The bytes stay readable: a later read faults them in from the file.
  static void dropPages(const void* p, size_t n);

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace crosslab::model
