#pragma once
// SHA-256 of files and byte strings, as lowercase hex (OpenSSL's libcrypto does the work):
// eval sets (samples.eval_sha256), model provenance (preflight), the demo lab.

#include <filesystem>
#include <string>
#include <string_view>

namespace crosslab::util {

std::string sha256Hex(std::string_view bytes);

// Incremental: update() any number of times, then hex() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view bytes);
  std::string hex();

 private:
  void* ctx_;  // EVP_MD_CTX, kept out of this header
};
// Throws std::runtime_error naming the file when it cannot be read.
std::string sha256File(const std::filesystem::path& path);

}  // namespace crosslab::util
