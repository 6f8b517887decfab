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
  for (const auto& c : commands)
    os << "  " << std::left << std::setw(14) << c.path << "  " << c.summary << "\n";
  os << "\nExit codes: 0 success, 1 failure (reason on stderr), 2 usage error.\n";
}

void printCommandHelp(const Command& c, std::ostream& os) {
  os << "usage: " << kProgram << " " << c.path << (c.synopsis.empty() ? "" : " ") << c.synopsis
     << "\n\n" << c.summary << "\n";
  if (!c.options.empty()) {
    os << "\noptions:\n";
    for (const auto& o : c.options) {
      std::string left = o.name + (o.takesValue ? " VALUE" : "");
      os << "  " << std::left << std::setw(20) << left << "  " << o.help << "\n";
    }
  }
  os << "  " << std::left << std::setw(20) << "--help" << "  show this help\n";
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

}  // namespace

int runCli(const std::vector<Command>& commands, const std::vector<std::string>& argv, std::ostream& out,
           std::ostream& err) {
  if (argv.empty()) {
    printCommandList(commands, err);
    return 2;
  }
  if (argv[0] == "help" || argv[0] == "--help" || argv[0] == "-h") {
    if (argv.size() > 1) {  // "help lab info" == "lab info --help"
      std::vector<std::string> rest(argv.begin() + 1, argv.end());
      rest.push_back("--help");
      return runCli(commands, rest, out, err);
    }
    printCommandList(commands, out);
    return 0;
  }

  size_t consumed = 0;
  const Command* cmd = findCommand(commands, argv, consumed);
  if (!cmd) {
    const auto fam = family(commands, argv[0]);
    if (!fam.empty()) {
      const bool askedHelp = argv.size() > 1 && argv[1] == "--help";
      std::ostream& os = askedHelp ? out : err;
      if (!askedHelp && argv.size() > 1)
        os << kProgram << ": unknown command '" << argv[0] << " " << argv[1] << "'\n";
      os << "usage:\n";
      for (const auto* c : fam) os << "  " << kProgram << " " << c->path << " " << c->synopsis << "\n";
      return askedHelp ? 0 : 2;
    }
    err << kProgram << ": unknown command '" << argv[0] << "' (see '" << kProgram << " help')\n";
    return 2;
  }

  const std::vector<std::string> rest(argv.begin() + static_cast<std::ptrdiff_t>(consumed), argv.end());
  if (std::find(rest.begin(), rest.end(), "--help") != rest.end()) {
    printCommandHelp(*cmd, out);
    return 0;
  }
  Context ctx{out, err};
  try {
    Args args(rest, cmd->options);
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
