#pragma once
// Shared by every fuzz target. A target's contract: for any input bytes the reader either
// accepts them or throws the one error type it documents (a clear, one-line reason); any
// other exception, a crash, a sanitizer report or a broken invariant is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace crosslab::fuzz {

inline std::string text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// An invariant the reader broke: say which, then abort (libFuzzer keeps the input).
[[noreturn]] inline void broken(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) broken(what);
}

// An error message must be one line a user can read: not empty, no newline.
inline void oneLine(const char* message) {
  const std::string m(message);
  require(!m.empty(), "empty error message");
  require(m.find('\n') == std::string::npos, "error message spans several lines");
}

}  // namespace crosslab::fuzz
