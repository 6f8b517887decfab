#pragma once
// SHA-256 (FIPS 180-4) of bytes, as lowercase hex. Identifies eval sets in the store
// (samples.eval_sha256) without pulling a crypto library into the Qt-free core.

#include <filesystem>
#include <string>
#include <string_view>

namespace crosslab::util {

std::string sha256Hex(std::string_view bytes);
// Throws std::runtime_error if the file cannot be read.
std::string sha256File(const std::filesystem::path& path);

}  // namespace crosslab::util
