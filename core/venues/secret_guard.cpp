#include "core/venues/secret_guard.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <regex>

#include "core/util/lab_files.h"

extern char** environ;

namespace fs = std::filesystem;

namespace crosslab::venues {
namespace {

constexpr std::size_t kMinSecretLength = 8;  // shorter values match too much by chance
constexpr std::size_t kChunk = 1 << 20;
constexpr std::uintmax_t kShapeScanLimit = 64ull << 20;  // token shapes: text-sized files only

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

const std::vector<std::pair<std::string, std::regex>>& shapes() {
  static const std::vector<std::pair<std::string, std::regex>> all = {
      {"a Hugging Face token (hf_…)", std::regex("hf_[A-Za-z0-9]{30,}")},
      {"an OpenAI-style API key (sk-…)", std::regex("sk-[A-Za-z0-9_-]{32,}")},
      {"an AWS access key id (AKIA…)", std::regex("AKIA[0-9A-Z]{16}")},
      {"a GitHub token (ghp_…)", std::regex("gh[pousr]_[A-Za-z0-9]{36}")},
      {"a private key block", std::regex("-----BEGIN [A-Z ]*PRIVATE KEY-----")},
  };
  return all;
}

}  // namespace

bool SecretGuard::looksLikeSecretName(const std::string& envName) {
  const std::string n = upper(envName);
  for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY",
                           "CREDENTIAL", "AUTH_KEY"})
    if (n.find(word) != std::string::npos) return true;
  return false;
}

SecretGuard SecretGuard::fromEnvironment() {
  SecretGuard g;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (looksLikeSecretName(name)) g.addSecret(name, entry.substr(eq + 1));
  }
  return g;
}

void SecretGuard::addSecret(const std::string& label, const std::string& value) {
  if (value.size() < kMinSecretLength) return;
  for (const auto& s : secrets_)
    if (s.value == value) return;
  secrets_.push_back({label, value});
}

std::optional<std::string> SecretGuard::findIn(const std::string& data, bool checkShapes) const {
  for (const auto& s : secrets_) {
    const auto it = std::search(data.begin(), data.end(), std::boyer_moore_horspool_searcher(s.value.begin(), s.value.end()));
    if (it != data.end()) return s.label;
  }
  if (checkShapes)
    for (const auto& [label, re] : shapes())
      if (std::regex_search(data, re)) return label;
  return std::nullopt;
}

void SecretGuard::checkText(const std::string& data, const std::string& what) const {
  if (auto hit = findIn(data))
    throw SecretLeak("refused: " + what + " contains " + *hit + "; secrets stay on this machine");
}

void SecretGuard::checkFile(const fs::path& file) const {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw SecretLeak("refused: cannot read " + file.string() + " to check it for secrets");
  std::size_t longest = 64;  // overlap so that a secret across a chunk border is still seen
  for (const auto& s : secrets_) longest = std::max(longest, s.value.size());
  const bool shapesToo = !ec && size <= kShapeScanLimit;
  std::string window;
  std::vector<char> buf(kChunk);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    window.append(buf.data(), got);
    if (auto hit = findIn(window, shapesToo))
      throw SecretLeak("refused: " + file.string() + " contains " + *hit + "; secrets stay on this machine");
    if (window.size() > longest) window.erase(0, window.size() - longest);
  }
}

void SecretGuard::checkPath(const fs::path& path) const {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::recursive_directory_iterator(path, ec))
      if (entry.is_regular_file() && !util::isLabDatabaseFile(entry.path())) checkFile(entry.path());  // never pushed
    return;
  }
  checkFile(path);
}

std::string SecretGuard::redact(std::string text) const {
  for (const auto& s : secrets_)
    for (std::size_t pos; (pos = text.find(s.value)) != std::string::npos;) text.replace(pos, s.value.size(), "***");
  return text;
}

}  // namespace crosslab::venues
