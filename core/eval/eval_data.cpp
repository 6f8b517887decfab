#include "core/eval/eval_data.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "core/util/lab_files.h"
#include "core/util/sha256.h"

namespace crosslab::eval {
namespace {

using nlohmann::json;
using util::Sha256;
using util::sha256Hex;

[[noreturn]] void fail(const std::string& name, size_t line, const std::string& why) {
  throw EvalError(name + ":" + std::to_string(line) + ": " + why);
}

std::string requireString(const json& obj, const char* key, const std::string& name, size_t line) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(name, line, std::string("missing \"") + key + "\"");
  if (!it->is_string()) fail(name, line, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

// Calls `onObject(json, lineNumber)` for every non-blank line; feeds the exact bytes read
// (newlines included) to `hash` when given.
template <typename F>
void forEachLine(std::istream& in, const std::string& name, F onObject, Sha256* hash = nullptr) {
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (hash) {
      hash->update(line);
      if (!in.eof()) hash->update("\n");  // eof: the last line had no newline
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json obj = json::parse(line, nullptr, false);
    if (obj.is_discarded()) fail(name, n, "not valid JSON");
    if (!obj.is_object()) fail(name, n, "each line must be a JSON object");
    onObject(obj, n);
  }
}

}  // namespace

const EvalQuestion* EvalSet::find(const std::string& id) const {
  auto it = indexById.find(id);
  return it == indexById.end() ? nullptr : &questions[it->second];
}

namespace {

// Questions of an eval stream (sha256 left empty).
EvalSet readEvalSet(std::istream& in, const std::string& name, Sha256* hash) {
  EvalSet set;
  forEachLine(
      in, name, [&](const json& obj, size_t n) {
    EvalQuestion q;
    q.id = requireString(obj, "id", name, n);
    q.question = requireString(obj, "question", name, n);
    auto ctx = obj.find("contexts");
    if (ctx == obj.end() || !ctx->is_array()) fail(name, n, "\"contexts\" must be an array of strings");
    for (const auto& c : *ctx) {
      if (!c.is_string()) fail(name, n, "\"contexts\" must be an array of strings");
      q.contexts.push_back(c.get<std::string>());
    }
    if (auto ref = obj.find("reference"); ref != obj.end() && ref->is_string()) q.reference = ref->get<std::string>();
    if (set.indexById.count(q.id)) fail(name, n, "duplicate id \"" + q.id + "\"");
    set.indexById[q.id] = set.questions.size();
    set.questions.push_back(std::move(q));
  }, hash);
  if (set.questions.empty()) throw EvalError(name + ": no questions");
  return set;
}

}  // namespace

EvalSet parseEvalSet(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  EvalSet set = readEvalSet(in, name, nullptr);
  set.sha256 = sha256Hex(text);
  return set;
}

// Streams the file, hashing exactly the bytes it parses (a 165 MB eval set is never held
// as text, and the hash always names what was read).
EvalSet loadEvalSet(const std::filesystem::path& path) {
  if (util::isLabDatabaseFile(path)) throw EvalError(util::labDatabaseRefusal(path, "reading an eval set"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EvalError("cannot read " + path.string());
  Sha256 hash;
  EvalSet set = readEvalSet(in, path.string(), &hash);
  if (in.bad()) throw EvalError("error reading " + path.string());
  set.sha256 = hash.hex();
  return set;
}

std::vector<OutputRecord> parseOutputs(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::vector<OutputRecord> out;
  std::set<std::pair<std::string, std::string>> seen;
  forEachLine(in, name, [&](const json& obj, size_t n) {
    OutputRecord r{requireString(obj, "id", name, n), requireString(obj, "model", name, n),
                   requireString(obj, "output", name, n)};
    if (!seen.insert({r.id, r.model}).second)
      fail(name, n, "duplicate output for id \"" + r.id + "\", model \"" + r.model + "\"");
    out.push_back(std::move(r));
  });
  return out;
}

std::vector<OutputRecord> loadOutputs(const std::filesystem::path& path) {
  return parseOutputs(readFile(path), path.string());
}

std::vector<std::string> modelsOf(const std::vector<OutputRecord>& outputs) {
  std::vector<std::string> models;
  std::set<std::string> seen;
  for (const auto& r : outputs)
    if (seen.insert(r.model).second) models.push_back(r.model);
  return models;
}

std::string readFile(const std::filesystem::path& path) {
  if (util::isLabDatabaseFile(path)) throw EvalError(util::labDatabaseRefusal(path, "reading"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw EvalError("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw EvalError("error reading " + path.string());
  return ss.str();
}

void writeFileAtomic(const std::filesystem::path& path, const std::string& bytes) {
  if (util::isLabDatabaseFile(path)) throw EvalError(util::labDatabaseRefusal(path, "writing"));
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw EvalError("cannot write " + tmp.string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw EvalError("error writing " + tmp.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw EvalError("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

}  // namespace crosslab::eval
