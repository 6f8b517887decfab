#include "core/venues/timeline_file.h"

#include <nlohmann/json.hpp>

#include <sstream>
#include <stdexcept>

namespace crosslab::venues {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void bad(int line, const std::string& why) {
  throw std::invalid_argument("line " + std::to_string(line) + ": " + why);
}

Milestone fromJson(const nlohmann::json& j, int line) {
  if (!j.is_object()) bad(line, "not a JSON object");
  const auto name = j.find("milestone");
  const auto at = j.find("at");
  if (name == j.end() || !name->is_string() || trim(name->get<std::string>()).empty())
    bad(line, "no \"milestone\" name");
  if (at == j.end() || !at->is_string()) bad(line, "no \"at\" time");
  const auto when = parseUtc(at->get<std::string>());
  if (!when) bad(line, "\"at\" is not an ISO-8601 UTC time (2026-01-01T22:30:00Z): " + at->get<std::string>());
  Milestone m{trim(name->get<std::string>()), *when, "imported"};
  if (auto note = j.find("note"); note != j.end() && note->is_string()) m.note = *note;
  return m;
}

Milestone fromText(const std::string& line, int number) {
  const auto cut = line.find_first_of(" \t,;");
  if (cut == std::string::npos) bad(number, "expected a time and a milestone name");
  const std::string at = line.substr(0, cut);
  const std::string name = trim(line.substr(cut + 1));
  const auto when = parseUtc(at);
  if (!when) bad(number, "'" + at + "' is not an ISO-8601 UTC time (2026-01-01T22:30:00Z)");
  if (name.empty()) bad(number, "no milestone name after the time");
  return {name, *when, "imported"};
}

}  // namespace

std::vector<Milestone> parseTimelineFile(const std::string& text) {
  std::vector<Milestone> out;
  const std::string body = trim(text);
  // One JSON document: {"milestones": […]} or […] (possibly over several lines).
  if (!body.empty() && (body.front() == '[' || body.front() == '{')) {
    const auto doc = nlohmann::json::parse(body, nullptr, false);
    if (!doc.is_discarded() && (doc.is_array() || doc.contains("milestones"))) {
      const auto& list = doc.is_array() ? doc : doc.at("milestones");
      if (!list.is_array()) bad(1, "\"milestones\" is not an array");
      for (const auto& j : list) out.push_back(fromJson(j, static_cast<int>(out.size()) + 1));
      return out;
    }
  }
  std::istringstream in(text);
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '{') {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) bad(number, "not valid JSON");
      out.push_back(fromJson(j, number));
    } else {
      out.push_back(fromText(line, number));
    }
  }
  if (out.empty()) throw std::invalid_argument("no milestones in the file");
  return out;
}

}  // namespace crosslab::venues
