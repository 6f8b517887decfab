#include <nlohmann/json.hpp>

#include <algorithm>
#include <exception>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/command.h"

namespace crosslab::cli {
namespace {

constexpr const char* kProgram = "crosslab-cli";

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> words;
  std::istringstream in(path);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

void printCommandList(const std::vector<Command>& commands, std::ostream& os) {
  os << "usage: " << kProgram << " COMMAND [ARGS] [--help]\n\ncommands:\n";
  size_t width = 0;
  for (const auto& c : commands) width = std::max(width, c.path.size());
  for (const auto& c : commands)
    os << "  " << std::left << std::setw(static_cast<int>(width)) << c.path << "  " << c.summary << "\n";
  os << "\nExit codes: 0 success, 1 failure (reason on stderr), 2 usage error.\n";
}

// `help --json`: every command with its options, for scripts and the tests that walk them.
void printCommandListJson(const std::vector<Command>& commands, std::ostream& os) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : commands) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& o : c.options)
      options.push_back({{"name", o.name}, {"takes_value", o.takesValue}, {"required", o.required}, {"help", o.help}});
    list.push_back({{"path", c.path}, {"synopsis", c.synopsis}, {"summary", c.summary}, {"options", options}});
  }
  os << nlohmann::json{{"program", kProgram}, {"commands", list}}.dump() << "\n";
}

void printCommandHelp(const Command& c, std::ostream& os) {
  os << "usage: " << kProgram << " " << c.path << (c.synopsis.empty() ? "" : " ") << c.synopsis
     << "\n\n" << c.summary << "\n";
  if (!c.options.empty()) {
    os << "\noptions:\n";
    for (const auto& o : c.options) {
      std::string left = o.name + (o.takesValue ? " VALUE" : "");
      os << "  " << std::left << std::setw(20) << left << "  " << o.help << (o.required ? " (required)" : "") << "\n";
    }
  }
  os << "  " << std::left << std::setw(20) << "--help, -h" << "  show this help\n";
}

// The command whose path is the longest prefix of argv; `consumed` = words it used.
const Command* findCommand(const std::vector<Command>& commands, const std::vector<std::string>& argv,
                           size_t& consumed) {
  const Command* best = nullptr;
  consumed = 0;
  for (const auto& c : commands) {
    const auto words = split(c.path);
    if (words.size() > argv.size() || words.size() <= consumed) continue;
    if (std::equal(words.begin(), words.end(), argv.begin())) {
      best = &c;
      consumed = words.size();
    }
  }
  return best;
}

// Subcommands of a family ("lab") when the user typed only the family name.
std::vector<const Command*> family(const std::vector<Command>& commands, const std::string& word) {
  std::vector<const Command*> out;
  for (const auto& c : commands)
    if (split(c.path).front() == word) out.push_back(&c);
  return out;
}

bool isHelpWord(const std::string& word) { return word == "--help" || word == "-h"; }

// --help or -h among the options (not after "--", where words belong to a remote command).
bool asksForHelp(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens) {
    if (t == "--") return false;
    if (isHelpWord(t)) return true;
  }
  return false;
}

void printFamilyUsage(const std::vector<const Command*>& fam, std::ostream& os) {
  os << "usage:\n";
  for (const auto* c : fam) os << "  " << kProgram << " " << c->path << " " << c->synopsis << "\n";
}

// `help TOPIC…`: the help of a command or of a command group. Not recursive: the words
// help, --help and -h in the topic are skipped ("help help" prints the command list).
int printHelpFor(const std::vector<Command>& commands, const std::vector<std::string>& words, std::ostream& out,
                 std::ostream& err) {
  std::vector<std::string> topic;
  bool json = false;
  for (const auto& w : words) {
    if (w == "--json") json = true;
    else if (w != "help" && !isHelpWord(w)) topic.push_back(w);
  }
  if (topic.empty()) {
    if (json) printCommandListJson(commands, out);
    else printCommandList(commands, out);
    return 0;
  }
  size_t consumed = 0;
  if (const Command* cmd = findCommand(commands, topic, consumed); cmd && consumed == topic.size()) {
    printCommandHelp(*cmd, out);
    return 0;
  }
  if (const auto fam = family(commands, topic[0]); !fam.empty() && topic.size() == 1) {
    printFamilyUsage(fam, out);
    return 0;
  }
  std::string name;
  for (const auto& w : topic) name += (name.empty() ? "" : " ") + w;
  err << kProgram << ": unknown command '" << name << "' (see '" << kProgram << " help')\n";
  return 2;
}

}  // namespace

int runCli(const std::vector<Command>& commands, const std::vector<std::string>& argv, std::ostream& out,
           std::ostream& err) {
  if (argv.empty()) {
    printCommandList(commands, err);
    return 2;
  }
  if (argv[0] == "help" || isHelpWord(argv[0]))  // "help lab info" == "lab info --help"
    return printHelpFor(commands, std::vector<std::string>(argv.begin() + 1, argv.end()), out, err);

  size_t consumed = 0;
  const Command* cmd = findCommand(commands, argv, consumed);
  if (!cmd) {
    const auto fam = family(commands, argv[0]);
    if (!fam.empty()) {
      const bool askedHelp = argv.size() > 1 && isHelpWord(argv[1]);
      std::ostream& os = askedHelp ? out : err;
      if (!askedHelp && argv.size() > 1)
        os << kProgram << ": unknown command '" << argv[0] << " " << argv[1] << "'\n";
      printFamilyUsage(fam, os);
      return askedHelp ? 0 : 2;
    }
    err << kProgram << ": unknown command '" << argv[0] << "' (see '" << kProgram << " help')\n";
    return 2;
  }

  const std::vector<std::string> rest(argv.begin() + static_cast<std::ptrdiff_t>(consumed), argv.end());
  if (asksForHelp(rest)) {
    printCommandHelp(*cmd, out);
    return 0;
  }
  Context ctx{out, err};
  try {
    Args args(rest, cmd->options);
    // Arguments before anything else: a missing required option is a usage error before
    // the command opens a file, a lab or a connection.
    for (const auto& o : cmd->options)
      if (o.required && !args.has(o.name)) throw UsageError(o.name + " is required");
    return cmd->run(args, ctx);
  } catch (const UsageError& e) {
    err << kProgram << " " << cmd->path << ": " << e.what() << "\n"
        << "usage: " << kProgram << " " << cmd->path << " " << cmd->synopsis << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    err << kProgram << " " << cmd->path << ": " << msg << "\n";
    return 1;
  }
}

}  // namespace crosslab::cli
