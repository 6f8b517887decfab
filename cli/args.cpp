#include "cli/args.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace crosslab::cli {

Args::Args(const std::vector<std::string>& tokens, const std::vector<OptionSpec>& specs) {
  bool optionsEnded = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& tok = tokens[i];
    if (optionsEnded || tok.size() < 2 || tok.compare(0, 2, "--") != 0) {
      positionals_.push_back(tok);
      continue;
    }
    if (tok == "--") {
      optionsEnded = true;
      continue;
    }
    std::string name = tok;
    std::optional<std::string> inlineValue;
    if (auto eq = tok.find('='); eq != std::string::npos) {
      name = tok.substr(0, eq);
      inlineValue = tok.substr(eq + 1);
    }
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const OptionSpec& s) { return s.name == name; });
    if (spec == specs.end()) throw UsageError("unknown option " + name);
    if (!spec->takesValue) {
      if (inlineValue) throw UsageError(name + " takes no value");
      values_[name] = "";
    } else if (inlineValue) {
      values_[name] = *inlineValue;
      all_[name].push_back(*inlineValue);
    } else if (i + 1 < tokens.size()) {
      values_[name] = tokens[++i];
      all_[name].push_back(tokens[i]);
    } else {
      throw UsageError(name + " needs a value");
    }
  }
}

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = all_.find(name);
  return it == all_.end() ? std::vector<std::string>{} : it->second;
}

long long Args::integer(const std::string& name, long long fallback, long long min, long long max) const {
  const auto v = value(name);
  if (!v) return fallback;
  size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == v->size() && !v->empty() && x >= min && x <= max) return x;
  std::string range;
  if (min != std::numeric_limits<long long>::min() || max != std::numeric_limits<long long>::max())
    range = max == std::numeric_limits<long long>::max() ? " >= " + std::to_string(min)
                                                         : " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  throw UsageError(name + " needs a whole number" + range + ", not '" + *v + "'");
}

double parseNumber(const std::string& what, const std::string& text) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == text.size() && !text.empty() && std::isfinite(x)) return x;
  throw UsageError(what + " needs a number, not '" + text + "'");
}

double Args::number(const std::string& name, double fallback) const {
  const auto v = value(name);
  return v ? parseNumber(name, *v) : fallback;
}

double Args::number(const std::string& name, double fallback, double min, double max) const {
  const double x = number(name, fallback);
  if (has(name) && !(x >= min && x <= max)) {
    std::ostringstream range;
    range << name << " needs a number in [" << min << ", " << max << "], not '" << *value(name) << "'";
    throw UsageError(range.str());
  }
  return x;
}

std::optional<double> Args::optionalNumber(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  return number(name, 0);
}

const std::string& Args::required(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) throw UsageError(name + " is required");
  return it->second;
}

std::filesystem::path Args::directory(const std::string& name) const {
  const std::string& dir = required(name);
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error(dir + ": not a directory");
  return dir;
}

std::string Args::choice(const std::string& name, const std::vector<std::string>& allowed,
                         const std::string& fallback) const {
  const auto v = value(name);
  if (!v) return fallback;
  if (std::find(allowed.begin(), allowed.end(), *v) != allowed.end()) return *v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw UsageError(name + " must be one of: " + list + " (not '" + *v + "')");
}

const std::string& Args::positional(size_t index, const std::string& what) const {
  if (index >= positionals_.size()) throw UsageError("missing " + what);
  return positionals_[index];
}

void Args::expectPositionals(size_t min, size_t max) const {
  if (positionals_.size() < min) throw UsageError("too few arguments");
  if (positionals_.size() > max) throw UsageError("unexpected argument '" + positionals_[max] + "'");
}

}  // namespace crosslab::cli
