#pragma once
// SHA-256 of files and byte strings, as lowercase hex (OpenSSL's libcrypto does the work).

#include <filesystem>
#include <string>
#include <string_view>

namespace crosslab::eval {

std::string sha256Hex(std::string_view bytes);
// Throws std::runtime_error naming the file when it cannot be read.
std::string sha256File(const std::filesystem::path& path);

}  // namespace crosslab::eval
