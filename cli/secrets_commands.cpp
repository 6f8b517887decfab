// crosslab-cli secrets set|forget NAME: keep an API key in the OS keyring instead of the
// environment. The value is read from stdin (not echoed on a terminal), never printed.
#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <ostream>

#include "cli/commands.h"
#include "backends/secrets/keyring.h"

namespace crosslab::backends {
namespace {

std::string readValue(std::ostream& err) {
  const bool tty = isatty(STDIN_FILENO);
  termios saved{};
  if (tty) {
    err << "value (not shown): " << std::flush;
    tcgetattr(STDIN_FILENO, &saved);
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  }
  std::string value;
  std::getline(std::cin, value);
  if (tty) {
    tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    err << "\n";
  }
  return value;
}

int secretsSet(const cli::Args& args, cli::Context& ctx) {
  args.expectPositionals(1, 1);
  const std::string name = args.positional(0, "NAME");
  const std::string value = readValue(ctx.err);
  if (value.empty()) throw std::runtime_error("no value given on stdin; nothing stored");
  const auto r = secrets::writeSecret(QString::fromStdString(name), QString::fromStdString(value));
  if (!r.ok) throw std::runtime_error("cannot store '" + name + "': " + r.error.toStdString());
  ctx.out << "stored '" << name << "' in the OS keyring\n";
  return 0;
}

int secretsForget(const cli::Args& args, cli::Context& ctx) {
  args.expectPositionals(1, 1);
  const std::string name = args.positional(0, "NAME");
  const auto r = secrets::forgetSecret(QString::fromStdString(name));
  if (!r.ok) throw std::runtime_error("cannot forget '" + name + "': " + r.error.toStdString());
  ctx.out << "forgot '" << name << "'\n";
  return 0;
}

}  // namespace

void addSecretsCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"secrets set", "NAME  (value on stdin)",
                      "store an API key in the OS keyring (hotaisle-api-key, hf-token)", {}, secretsSet});
  commands.push_back({"secrets forget", "NAME", "remove a key from the OS keyring", {}, secretsForget});
}

}  // namespace crosslab::backends
