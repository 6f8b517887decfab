#pragma once
// Command-line arguments for one subcommand: declared options, positionals, and a
// UsageError (exit code 2) for anything that does not fit. The argument helpers every
// command uses (required options, folders, numbers, choices) are here, once.

#include <filesystem>
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
  std::string name;       // "--json"
  bool takesValue;        // "--name NAME" vs a switch
  std::string help;
  bool required = false;  // runCli refuses the command without it (exit 2), before running it
};

// `text` as a real number, else UsageError "WHAT needs a number, not 'TEXT'" (for list items).
double parseNumber(const std::string& what, const std::string& text);

class Args {
 public:
  // Parses `tokens` against `specs`. "--name=value" and "--name value" both work;
  // "--" ends options. Unknown options and missing values throw UsageError.
  Args(const std::vector<std::string>& tokens, const std::vector<OptionSpec>& specs);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::optional<std::string> value(const std::string& name) const;
  // The value of an option that must be given (and not empty), else UsageError
  // "--name is required".
  const std::string& required(const std::string& name) const;
  // A required option naming an existing folder: UsageError when absent, a failure
  // (exit 1) "PATH: not a directory" when it is not one.
  std::filesystem::path directory(const std::string& name) const;
  // One of `allowed` (absent: fallback); anything else is a UsageError listing them.
  std::string choice(const std::string& name, const std::vector<std::string>& allowed, const std::string& fallback) const;
  // Every value of an option given more than once ("--lora a=X --lora b=Y"), in order.
  std::vector<std::string> values(const std::string& name) const;
  // A whole-number option in [min, max] (absent: fallback); anything else is a UsageError
  // naming the option ("--port needs a whole number in [0, 65535], not 'x'").
  long long integer(const std::string& name, long long fallback, long long min = std::numeric_limits<long long>::min(),
                    long long max = std::numeric_limits<long long>::max()) const;
  // A real-number option (absent: fallback); anything else is a UsageError naming it.
  double number(const std::string& name, double fallback) const;
  // The same, bounded: a value outside [min, max] is a UsageError naming the range.
  double number(const std::string& name, double fallback, double min, double max) const;
  // A real-number option that may be absent.
  std::optional<double> optionalNumber(const std::string& name) const;
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
