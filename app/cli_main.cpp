// crosslab-cli: the headless engine and tools. Wiring only: every command lives in cli/,
// grouped by topic.
#include <QCoreApplication>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "backends/qt_messages.h"
#include "cli/venue_support.h"
#include "core/util/openmp_waits.h"

int main(int argc, char** argv) {
  // A server's OpenMP workers must sleep when idle, not spin (core/util/openmp_waits.h): set
  // before libgomp loads, so by running again with the variable set.
  if (argc >= 2 && std::string(argv[1]) == "serve") crosslab::util::reexecWithPassiveOpenMpWaits(argv);
  // Before anything is opened: the passphrase descriptor, if the caller handed us one.
  crosslab::backends::takePassphraseDescriptor();
  // Commands that use Qt Network need an application object; it needs no display.
  QCoreApplication app(argc, argv);
  // Logs go to stderr so that stdout carries only results (JSON, ids, text).
  auto logger = spdlog::stderr_color_mt("crosslab");
  logger->set_level(spdlog::level::warn);
  if (const char* level = std::getenv("CROSSLAB_LOG")) logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
  crosslab::backends::routeQtMessagesToLog();  // Qt's internal warnings are not the user's business

  const auto commands = crosslab::cli::allCommands();
  std::vector<std::string> args(argv + 1, argv + argc);
  return crosslab::cli::runCli(commands, args, std::cout, std::cerr);
}
