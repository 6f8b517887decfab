#include "core/cli/args.h"

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

const std::string& Args::positional(size_t index, const std::string& what) const {
  if (index >= positionals_.size()) throw UsageError("missing " + what);
  return positionals_[index];
}

void Args::expectPositionals(size_t min, size_t max) const {
  if (positionals_.size() < min) throw UsageError("too few arguments");
  if (positionals_.size() > max) throw UsageError("unexpected argument '" + positionals_[max] + "'");
}

}  // namespace crosslab::cli
