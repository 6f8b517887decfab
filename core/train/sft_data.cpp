#include "core/train/sft_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/util/lab_files.h"
#include "core/util/printable.h"

namespace crosslab::train {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  util::refuseLabDatabaseFile(p, "reading training data");
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A JSON array of records, or JSON Lines (one record per non-empty line).
std::vector<json> readRecords(const std::string& text, const std::string& source) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw std::runtime_error(source + ": no records");
  std::vector<json> out;
  if (text[first] == '[') {
    try {
      json arr = json::parse(text);
      for (auto& r : arr) out.push_back(std::move(r));
    } catch (const json::exception& e) {
      throw std::runtime_error(source + ": " + e.what());
    }
    return out;
  }
  std::istringstream lines(text);
  int lineNo = 0;
  for (std::string line; std::getline(lines, line);) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(json::parse(line));
    } catch (const json::exception& e) {
      throw std::runtime_error(source + " line " + std::to_string(lineNo) + ": " + e.what());
    }
  }
  return out;
}


std::string textField(const json& rec, const std::string& key, const std::string& where) {
  if (!rec.contains(key) || rec[key].is_null()) return {};
  if (!rec[key].is_string()) throw std::runtime_error(where + ": '" + util::printable(key) + "' is not text");
  return rec[key].get<std::string>();
}

// LLaMA-Factory's convert_alpaca: history pairs first, then instruction + "\n" + input.
Example fromAlpaca(const json& rec, const DataColumns& c, const std::string& where) {
  if (!rec.is_object()) throw std::runtime_error(where + ": expected an object");
  Example ex;
  ex.system = textField(rec, c.system, where);
  if (rec.contains(c.history) && rec[c.history].is_array()) {
    for (const auto& pair : rec[c.history]) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
        throw std::runtime_error(where + ": history entries must be [query, response] pairs");
      ex.messages.push_back({"user", pair[0].get<std::string>()});
      ex.messages.push_back({"assistant", pair[1].get<std::string>()});
    }
  }
  std::string prompt = textField(rec, c.prompt, where);
  const std::string query = textField(rec, c.query, where);
  if (!query.empty()) prompt = prompt.empty() ? query : prompt + "\n" + query;
  const std::string response = textField(rec, c.response, where);
  if (prompt.empty() || response.empty())
    throw std::runtime_error(where + ": needs a non-empty '" + util::printable(c.prompt) + "' (or '" + util::printable(c.query) +
                             "') and '" + util::printable(c.response) + "'");
  ex.messages.push_back({"user", prompt});
  ex.messages.push_back({"assistant", response});
  return ex;
}

Example fromShareGpt(const json& rec, const DataColumns& c, const std::string& where) {
  if (!rec.is_object() || !rec.contains(c.messages) || !rec[c.messages].is_array())
    throw std::runtime_error(where + ": expected an object with a '" + util::printable(c.messages) + "' array");
  Example ex;
  ex.system = textField(rec, c.system, where);
  size_t i = 0;
  const auto& msgs = rec[c.messages];
  for (size_t k = 0; k < msgs.size(); ++k)
    if (!msgs[k].is_object()) throw std::runtime_error(where + ": message " + std::to_string(k) + " is not an object");
  const auto tag = [](const json& m, const std::string& key) {
    const auto it = m.find(key);
    return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!msgs.empty() && tag(msgs[0], c.roleTag) == c.systemTag) {
    ex.system = tag(msgs[0], c.contentTag);
    i = 1;
  }
  for (; i < msgs.size(); ++i) {
    const auto& m = msgs[i];
    const std::string role = tag(m, c.roleTag);
    const bool expectUser = ex.messages.size() % 2 == 0;
    const std::string want = expectUser ? c.userTag : c.assistantTag;
    if (role != want)
      throw std::runtime_error(where + ": message " + std::to_string(i) + " is from '" + util::printable(role) + "', expected '" +
                               util::printable(want) + "'");
    if (!m.contains(c.contentTag) || !m[c.contentTag].is_string())
      throw std::runtime_error(where + ": message " + std::to_string(i) + " has no text '" + util::printable(c.contentTag) + "'");
    ex.messages.push_back({expectUser ? "user" : "assistant", m[c.contentTag].get<std::string>()});
  }
  if (ex.messages.empty() || ex.messages.size() % 2 != 0)
    throw std::runtime_error(where + ": a conversation must alternate user/assistant and end with the assistant");
  return ex;
}

std::vector<Example> convert(const std::vector<json>& records, const std::string& formatting, const DataColumns& c,
                             const std::string& file) {
  std::vector<Example> out;
  out.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string where = util::printable(file, 400) + " record " + std::to_string(i + 1);
    std::string f = formatting;
    if (f == "auto") f = records[i].is_object() && records[i].contains(c.messages) ? "sharegpt" : "alpaca";
    if (f == "alpaca") out.push_back(fromAlpaca(records[i], c, where));
    else if (f == "sharegpt") out.push_back(fromShareGpt(records[i], c, where));
    else throw std::runtime_error(file + ": formatting '" + util::printable(f) + "' is not supported (alpaca, sharegpt)");
  }
  return out;
}

// LLaMA-Factory's "columns" / "tags" objects: each value, when present, names a field.
void readNames(const json& info, const char* group, std::initializer_list<std::pair<const char*, std::string*>> names,
               const std::string& dataset) {
  const auto it = info.find(group);
  if (it == info.end() || it->is_null()) return;
  if (!it->is_object())
    throw std::runtime_error("dataset '" + util::printable(dataset) + "': '" + group + "' must be an object");
  for (const auto& [key, target] : names) {
    const auto v = it->find(key);
    if (v == it->end() || v->is_null()) continue;
    if (!v->is_string())
      throw std::runtime_error("dataset '" + util::printable(dataset) + "': " + group + "." + key + " must be a name");
    *target = v->get<std::string>();
  }
}

void readColumns(const json& info, DataColumns& c, const std::string& dataset) {
  readNames(info, "columns",
            {{"prompt", &c.prompt}, {"query", &c.query}, {"response", &c.response}, {"history", &c.history},
             {"messages", &c.messages}, {"system", &c.system}},
            dataset);
  readNames(info, "tags",
            {{"role_tag", &c.roleTag}, {"content_tag", &c.contentTag}, {"user_tag", &c.userTag},
             {"assistant_tag", &c.assistantTag}, {"system_tag", &c.systemTag}},
            dataset);
}

const char* kHeader(const std::string& role) {
  return role == "system" ? "<|start_header_id|>system<|end_header_id|>\n\n"
                          : role == "user" ? "<|start_header_id|>user<|end_header_id|>\n\n"
                                           : "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

}  // namespace

std::int64_t EncodedExample::trainedTokens() const {
  return std::count_if(labels.begin(), labels.end(), [](std::int32_t l) { return l != kIgnoreIndex; });
}

std::vector<Example> parseDataRecords(const std::string& text, const std::string& formatting,
                                     const DataColumns& columns, const std::string& source) {
  return convert(readRecords(text, source), formatting, columns, source);
}

std::vector<Example> loadDataFile(const std::string& path, const std::string& formatting) {
  return parseDataRecords(readFile(path), formatting, DataColumns{}, path);
}

DatasetEntry parseDatasetEntry(const std::string& infoText, const std::string& name, const std::string& source) {
  json info;
  try {
    info = json::parse(infoText);
  } catch (const json::exception& e) {
    throw std::runtime_error(source + ": " + e.what());
  }
  if (!info.contains(name)) throw std::runtime_error("dataset '" + util::printable(name) + "' is not in " + source);
  const json& entry = info[name];
  const std::string quoted = "dataset '" + util::printable(name) + "'";
  if (!entry.is_object()) throw std::runtime_error(quoted + " in " + source + " is not an object");
  if (!entry.contains("file_name"))
    throw std::runtime_error(quoted + " has no file_name (hub and script datasets are not supported)");
  if (!entry["file_name"].is_string()) throw std::runtime_error(quoted + ": file_name must be a file name");
  DatasetEntry d;
  readColumns(entry, d.columns, name);
  d.fileName = entry["file_name"].get<std::string>();
  if (const auto f = entry.find("formatting"); f != entry.end() && !f->is_null()) {
    if (!f->is_string()) throw std::runtime_error(quoted + ": formatting must be alpaca or sharegpt");
    d.formatting = f->get<std::string>();
  }
  return d;
}

std::vector<Example> loadDatasets(const std::string& dataDir, const std::string& names) {
  const fs::path infoPath = fs::path(dataDir) / "dataset_info.json";
  const std::string infoText = readFile(infoPath);
  std::vector<Example> all;
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    const DatasetEntry entry = parseDatasetEntry(infoText, name, infoPath.string());
    const fs::path file = fs::path(dataDir) / entry.fileName;
    auto part = parseDataRecords(readFile(file), entry.formatting, entry.columns, file.string());
    all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return all;
}

std::vector<TurnText> llama3Turns(const Example& ex) {
  std::vector<TurnText> turns;
  for (size_t i = 0; i + 1 < ex.messages.size(); i += 2) {
    TurnText t;
    if (i == 0 && !ex.system.empty()) t.source = std::string(kHeader("system")) + ex.system + "<|eot_id|>";
    t.source += std::string(kHeader("user")) + ex.messages[i].content + "<|eot_id|>" + kHeader("assistant");
    t.target = ex.messages[i + 1].content + "<|eot_id|>";
    turns.push_back(std::move(t));
  }
  return turns;
}

std::string llama3Prompt(const Example& ex) {
  std::string out;
  if (!ex.system.empty()) out = std::string(kHeader("system")) + ex.system + "<|eot_id|>";
  for (const auto& m : ex.messages) {
    if (&m == &ex.messages.back() && m.role == "assistant") break;
    out += std::string(kHeader(m.role)) + m.content + "<|eot_id|>";
  }
  return out + kHeader("assistant");
}

std::pair<std::int64_t, std::int64_t> inferSeqlen(std::int64_t sourceLen, std::int64_t targetLen, std::int64_t cutoff) {
  std::int64_t maxTarget;
  if (targetLen * 2 < cutoff) maxTarget = cutoff;                 // truncate the source
  else if (sourceLen * 2 < cutoff) maxTarget = cutoff - sourceLen; // truncate the target
  else maxTarget = static_cast<std::int64_t>(static_cast<double>(cutoff) * (static_cast<double>(targetLen) /
                                                                              static_cast<double>(sourceLen + targetLen)));
  const std::int64_t newTarget = std::min(maxTarget, targetLen);
  const std::int64_t maxSource = std::max<std::int64_t>(cutoff - newTarget, 0);
  return {std::min(maxSource, sourceLen), newTarget};
}

EncodedExample encodeSupervised(const Example& ex, const TextEncoder& encoder, std::int64_t cutoff) {
  EncodedExample out;
  std::int64_t total = 0;
  bool first = true;
  for (const auto& turn : llama3Turns(ex)) {
    if (total >= cutoff) break;
    std::vector<std::int32_t> source = encoder.encode(turn.source);
    if (first) source.insert(source.begin(), encoder.bosId());  // the template's prefix
    first = false;
    std::vector<std::int32_t> target = encoder.encode(turn.target);
    const auto [s, t] = inferSeqlen(static_cast<std::int64_t>(source.size()), static_cast<std::int64_t>(target.size()),
                                     cutoff - total);
    source.resize(static_cast<size_t>(s));
    target.resize(static_cast<size_t>(t));
    total += s + t;
    out.inputIds.insert(out.inputIds.end(), source.begin(), source.end());
    out.labels.insert(out.labels.end(), source.size(), kIgnoreIndex);
    out.inputIds.insert(out.inputIds.end(), target.begin(), target.end());
    out.labels.insert(out.labels.end(), target.begin(), target.end());
  }
  return out;
}

}  // namespace crosslab::train
