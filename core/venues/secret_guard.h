#pragma once
// Secrets stay home: before anything is uploaded to or executed on a remote box, the
// outgoing command text, environment and files are checked for any known secret value
// (API keys and tokens from this machine's environment or keyring) and for well-known
// token shapes (hf_…, sk-…, AKIA…, private-key blocks). A hit refuses the action; the
// error names the secret (HF_TOKEN), never its value.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosslab::venues {

class SecretLeak : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SecretGuard {
 public:
  // Secrets from environment variables whose names say they hold one (…TOKEN, …API_KEY,
  // …SECRET…, …PASSWORD…, AWS_SECRET_ACCESS_KEY …), values of 8+ characters.
  static SecretGuard fromEnvironment();
  static bool looksLikeSecretName(const std::string& envName);

  void addSecret(const std::string& label, const std::string& value);
  std::size_t size() const { return secrets_.size(); }

  // Label of the first secret or token shape found in `data`, if any.
  std::optional<std::string> findIn(const std::string& data, bool checkShapes = true) const;
  // Throws SecretLeak("… contains HF_TOKEN …") naming `what` (a command, a file).
  void checkText(const std::string& data, const std::string& what) const;
  // A file, or every file under a folder.
  void checkPath(const std::filesystem::path& path) const;
  // `text` with every known secret value replaced by "***" (for log lines).
  std::string redact(std::string text) const;

 private:
  void checkFile(const std::filesystem::path& file) const;
  struct Secret {
    std::string label, value;
  };
  std::vector<Secret> secrets_;
};

}  // namespace crosslab::venues
