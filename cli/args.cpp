#include "cli/args.h"

#include <algorithm>

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

double Args::number(const std::string& name, double fallback) const {
  const auto v = value(name);
  if (!v) return fallback;
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == v->size() && !v->empty()) return x;
  throw UsageError(name + " needs a number, not '" + *v + "'");
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
