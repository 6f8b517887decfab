#include "core/model/safetensors_writer.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

namespace crosslab::model {
namespace {

// RAII temp file next to the target; removed unless commit() renamed it into place.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target)
      : target_(target), tmp_(target.string() + ".tmp." + std::to_string(::getpid())) {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) throw std::runtime_error(target.string() + ": cannot create: " + std::strerror(errno));
  }
  ~TempFile() {
    if (f_) std::fclose(f_);
    if (!committed_) std::filesystem::remove(tmp_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      throw std::runtime_error(target_.string() + ": write failed: " + std::strerror(errno));
  }
  void commit() {
    const bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    std::fclose(f_);
    f_ = nullptr;
    if (!ok) throw std::runtime_error(target_.string() + ": flush failed");
    std::filesystem::rename(tmp_, target_);
    committed_ = true;
  }

 private:
  std::filesystem::path target_, tmp_;
  std::FILE* f_ = nullptr;
  bool committed_ = false;
};

std::string headerJson(const std::vector<TensorToWrite>& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (!seen.insert(t.name).second) throw std::runtime_error("duplicate tensor name '" + t.name + "'");
    uint64_t numel = 1;
    for (auto d : t.shape) numel *= static_cast<uint64_t>(d);
    if (numel * dtypeSize(t.dtype) != t.bytes)
      throw std::runtime_error("tensor '" + t.name + "': " + std::to_string(t.bytes) + " bytes given, shape needs " +
                               std::to_string(numel * dtypeSize(t.dtype)));
    h[t.name] = {{"dtype", dtypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data buffer starts 8-aligned
  return text;
}

}  // namespace

void writeSafetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string header = headerJson(tensors, metadata);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(uint64_t(header.size()) >> (8 * i));
  TempFile out(path);
  out.write(len, 8);
  out.write(header.data(), header.size());
  for (const auto& t : tensors) out.write(t.data, t.bytes);
  out.commit();
}

void writeFileAtomically(const std::filesystem::path& path, const std::string& text) {
  TempFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace crosslab::model
