#include "core/model/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <string_view>

#include "core/tokenizer/utf8.h"
#include "core/util/printable.h"

namespace crosslab::model {
namespace {

using nlohmann::json;

// Tensor names and keys come from the file: one printable line whatever they hold.
[[noreturn]] void fail(const std::string& what) { throw SafetensorsError(util::printable(what, 1000)); }

uint64_t readU64le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool mulOverflows(uint64_t a, uint64_t b, uint64_t& out) { return __builtin_mul_overflow(a, b, &out); }

uint64_t jsonU64(const json& v, const std::string& what) {
  if (!v.is_number_unsigned()) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<uint64_t>();
    fail(what + " must be a non-negative integer");
  }
  return v.get<uint64_t>();
}

TensorInfo parseEntry(const std::string& name, const json& e) {
  const std::string where = "tensor '" + name + "'";
  if (!e.is_object()) fail(where + ": entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key)) fail(where + ": missing '" + key + "'");
  TensorInfo t;
  t.name = name;
  if (!e["dtype"].is_string()) fail(where + ": dtype is not a string");
  const auto dt = dtypeFromName(e["dtype"].get<std::string>());
  if (!dt) fail(where + ": unknown dtype '" + e["dtype"].get<std::string>() + "'");
  t.dtype = *dt;
  if (!e["shape"].is_array()) fail(where + ": shape is not an array");
  uint64_t numel = 1;
  for (const auto& d : e["shape"]) {
    const uint64_t dim = jsonU64(d, where + ": shape entry");
    if (dim > uint64_t(std::numeric_limits<int64_t>::max()) || mulOverflows(numel, dim, numel))
      fail(where + ": shape overflows");
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2) fail(where + ": data_offsets must be [begin, end]");
  t.begin = jsonU64(off[0], where + ": data_offsets");
  t.end = jsonU64(off[1], where + ": data_offsets");
  if (t.end < t.begin) fail(where + ": data_offsets end < begin");
  uint64_t bytes = 0;
  if (mulOverflows(numel, dtypeSize(t.dtype), bytes)) fail(where + ": byte size overflows");
  if (bytes != t.end - t.begin)
    fail(where + ": " + std::to_string(t.end - t.begin) + " bytes in data_offsets, but shape and dtype " +
         dtypeName(t.dtype) + " need " + std::to_string(bytes));
  return t;
}

std::map<std::string, std::string> parseMetadata(const json& m) {
  if (!m.is_object()) fail("__metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (!it.value().is_string()) fail("__metadata__ value '" + it.key() + "' is not a string");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

// Offsets must tile the data buffer from 0 in order: no gaps, no overlaps.
void checkContiguous(const std::vector<TensorInfo>& sorted) {
  uint64_t expected = 0;
  const TensorInfo* prev = nullptr;
  for (const auto& t : sorted) {
    if (t.begin != expected) {
      const std::string kind = t.begin < expected ? "overlaps" : "leaves a gap after";
      fail("tensor '" + t.name + "' data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
           ") " + kind + (prev ? " '" + prev->name + "'" : std::string(" the buffer start")) + " (expected begin " +
           std::to_string(expected) + ")");
    }
    expected = t.end;
    prev = &t;
  }
}

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

SafetensorsHeader parseSafetensors(const uint8_t* data, size_t size) {
  if (size < 8) fail("file too short for a safetensors header (" + std::to_string(size) + " bytes)");
  const uint64_t n = readU64le(data);
  if (n > kMaxHeaderBytes)
    fail("header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeaderBytes));
  if (n > size - 8)
    fail("header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
         " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(data + 8), n);
  if (!tokenizer::isValidUtf8(text)) fail("header is not valid UTF-8");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is not a JSON object");

  SafetensorsHeader out;
  out.dataStart = 8 + n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      out.metadata = parseMetadata(it.value());
    else
      out.tensors.push_back(parseEntry(it.key(), it.value()));
  }
  std::sort(out.tensors.begin(), out.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  checkContiguous(out.tensors);
  const uint64_t dataBytes = out.tensors.empty() ? 0 : out.tensors.back().end;
  if (dataBytes != size - out.dataStart)
    fail("file is " + std::to_string(size) + " bytes, but the header describes " +
         std::to_string(out.dataStart + dataBytes) + (dataBytes > size - out.dataStart ? " (truncated)" : ""));
  return out;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path), map_(path) {
  try {
    header_ = parseSafetensors(map_.data(), map_.size());
  } catch (const SafetensorsError& e) {
    throw SafetensorsError(path.filename().string() + ": " + e.what());
  }
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_[header_.tensors[i].name] = i;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

TensorView SafetensorsFile::view(const TensorInfo& info) const {
  return {&info, map_.data() + header_.dataStart + info.begin};
}

bool SafetensorsFile::maps(const void* p, size_t n) const {
  const auto a = reinterpret_cast<uintptr_t>(p), lo = reinterpret_cast<uintptr_t>(map_.data());
  return a >= lo && n <= map_.size() && a - lo <= map_.size() - n;
}

}  // namespace crosslab::model
