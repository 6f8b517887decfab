#include "core/util/sha256.h"

#include "core/util/lab_files.h"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace crosslab::util {
namespace {

using Ctx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Ctx newContext() {
  Ctx ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: cannot initialise libcrypto digest");
  return ctx;
}

std::string finish(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx, digest.data(), &size) != 1) throw std::runtime_error("sha256: digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

Sha256::Sha256() : ctx_(newContext().release()) {}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256::update(std::string_view bytes) { EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size()); }
std::string Sha256::hex() { return finish(static_cast<EVP_MD_CTX*>(ctx_)); }

std::string sha256Hex(std::string_view bytes) {
  auto ctx = newContext();
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return finish(ctx.get());
}

std::string sha256File(const std::filesystem::path& path) {
  refuseLabDatabaseFile(path, "hashing");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  auto ctx = newContext();
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error("error reading " + path.string());
  return finish(ctx.get());
}

}  // namespace crosslab::util
