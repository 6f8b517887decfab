// crosslab-cli: the headless engine and tools. Wiring only; commands live in core/cli.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <string>
#include <vector>

#include "core/cli/command.h"

int main(int argc, char** argv) {
  // Logs go to stderr so that stdout carries only results (JSON, ids, text).
  auto logger = spdlog::stderr_color_mt("crosslab");
  logger->set_level(spdlog::level::warn);
  if (const char* level = std::getenv("CROSSLAB_LOG")) logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);

  std::vector<std::string> args(argv + 1, argv + argc);
  return crosslab::cli::runCli(args, std::cout, std::cerr);
}
