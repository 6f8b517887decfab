#pragma once
// Command-line arguments for one subcommand: declared options, positionals, and a
// UsageError (exit code 2) for anything that does not fit.

#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace crosslab::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;   // "--json"
  bool takesValue;    // "--name NAME" vs a switch
  std::string help;
};

class Args {
 public:
  // Parses `tokens` against `specs`. "--name=value" and "--name value" both work;
  // "--" ends options. Unknown options and missing values throw UsageError.
  Args(const std::vector<std::string>& tokens, const std::vector<OptionSpec>& specs);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> value(const std::string& name) const;
  // Every value of an option given more than once ("--lora a=X --lora b=Y"), in order.
  std::vector<std::string> values(const std::string& name) const;
  // A whole-number option in [min, max] (absent: fallback); anything else is a UsageError
  // naming the option ("--port needs a whole number in [0, 65535], not 'x'").
  long long integer(const std::string& name, long long fallback, long long min = std::numeric_limits<long long>::min(),
                    long long max = std::numeric_limits<long long>::max()) const;
  // A real-number option (absent: fallback); anything else is a UsageError naming it.
  double number(const std::string& name, double fallback) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  // The positional at `index`, or UsageError naming `what`.
  const std::string& positional(size_t index, const std::string& what) const;
  void expectPositionals(size_t min, size_t max) const;

 private:
  std::map<std::string, std::string> values_;  // the last value of each option
  std::map<std::string, std::vector<std::string>> all_;
  std::vector<std::string> positionals_;
};

}  // namespace crosslab::cli
