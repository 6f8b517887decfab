#pragma once
// The eval set and model outputs, as JSON Lines:
//   eval set:  {"id", "question", "contexts": ["...", ...], "reference"?}
//   outputs:   {"id", "model", "output"}
// The eval set is frozen: its SHA-256 (of the file's bytes) names it in every result.

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosslab::eval {

// A malformed file: what() is one line, "FILE:LINE: reason".
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EvalQuestion {
  std::string id;
  std::string question;
  std::vector<std::string> contexts;
  std::optional<std::string> reference;
};

struct EvalSet {
  std::string sha256;
  std::vector<EvalQuestion> questions;
  std::map<std::string, size_t> indexById;

  const EvalQuestion* find(const std::string& id) const;
};

struct OutputRecord {
  std::string id;      // question id
  std::string model;   // model label
  std::string output;  // raw text as the model wrote it
};

EvalSet loadEvalSet(const std::filesystem::path& path);
// Parses eval JSONL text (the sha256 is of `text`); `name` labels errors.
EvalSet parseEvalSet(const std::string& text, const std::string& name);

std::vector<OutputRecord> loadOutputs(const std::filesystem::path& path);
std::vector<OutputRecord> parseOutputs(const std::string& text, const std::string& name);

// Model labels in first-seen order.
std::vector<std::string> modelsOf(const std::vector<OutputRecord>& outputs);

// Reads a whole file; throws EvalError naming it.
std::string readFile(const std::filesystem::path& path);
// Writes via a temp file in the same folder + rename, so a reader never sees half a file.
void writeFileAtomic(const std::filesystem::path& path, const std::string& bytes);

}  // namespace crosslab::eval
