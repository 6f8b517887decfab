// crosslab-cli remote train|serve: run LLaMA-Factory, our own engine, vLLM or MLX on a
// box. Generated files and command lines are shown before they run; everything that
// leaves this machine passes the secret guard first.
#include <nlohmann/json.hpp>

#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <ostream>
#include <sstream>
#include <thread>

#include "cli/venue_support.h"
#include "cli/remote_steps.h"
#include "cli/commands.h"
#include "backends/remote/remote_run.h"
#include "backends/remote/box_access.h"
#include "backends/remote/run_stage.h"
#include "core/ledger/life_recorder.h"

namespace fs = std::filesystem;

namespace crosslab::backends {

namespace {

using cli::Args;
using cli::Context;

int remoteTrain(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const std::string engine = args.value("--engine").value_or("");
  if (engine != "llamafactory" && engine != "crosslab") throw cli::UsageError("--engine must be crosslab or llamafactory");
  const auto boxName = args.value("--box");
  const auto recipeFile = args.value("--recipe");
  const auto dataFile = args.value("--data");
  if (!boxName || !recipeFile || !dataFile) throw cli::UsageError("--box, --recipe and --data are required");
  if (!fs::is_regular_file(*dataFile)) throw std::runtime_error("no data file at " + *dataFile);
  auto recipe = train::loadRecipeFile(*recipeFile);
  if (args.has("--max-steps")) recipe.maxSteps = args.integer("--max-steps", 0, 1);
  if (recipe.modelPath.empty()) throw std::runtime_error(*recipeFile + ": no model_name_or_path (a path on the box or a hub id)");

  QTemporaryDir tmp;
  const fs::path stage = tmp.path().toStdString();
  const auto staged = remote::stageRun(recipe, remote::engineFromString(engine), *dataFile, recipe.modelPath, stage,
                                       args.value("--launcher").value_or(""));
  const std::string command = staged.command;
  recipe.outputDir = staged.outputDir;
  ctx.err << "command: " << command << "\n";
  if (args.has("--dry-run")) {
    // Every generated file with its contents; the training set is a copy of --data.
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(stage))
      if (e.is_regular_file()) names.push_back(fs::relative(e.path(), stage).string());
    std::sort(names.begin(), names.end());
    const std::string dataCopy = "data/" + fs::path(*dataFile).filename().string();  // as stageRun copies it
    nlohmann::json files = nlohmann::json::object();
    for (const auto& name : names) {
      if (name == dataCopy) {
        files[name] = {{"copy_of", *dataFile}, {"bytes", fs::file_size(stage / name)}};
        continue;
      }
      std::ifstream in(stage / name, std::ios::binary);
      files[name] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    if (args.has("--json")) {
      ctx.out << nlohmann::json{{"files", files}, {"command", command}}.dump() << "\n";
      return 0;
    }
    for (const auto& name : names) {
      ctx.out << "--- " << name << "\n";
      if (files[name].is_string()) {
        const std::string text = files[name].get<std::string>();
        ctx.out << text << (text.empty() || text.back() != '\n' ? "\n" : "");
      } else {
        ctx.out << "(a copy of " << *dataFile << ", " << files[name]["bytes"].get<std::uint64_t>() << " bytes)\n";
      }
    }
    ctx.out << "--- command\n" << command << "\n";
    return 0;
  }
  const auto guard = secretGuard();
  guard.checkPath(stage);
  guard.checkText(command, "the launch command");

  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto box = requireBox(store, *boxName);
  ssh::SshSession session(sshTargetFor(box, args));
  session.connect();
  const std::string workDir = args.value("--workdir").value_or("crosslab-runs/" + store::utcNow());
  const double stagedAt = ledger::epochNow();
  remote::uploadFolder(session, stage, workDir);
  std::int64_t stagedBytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(stage))
    if (e.is_regular_file()) stagedBytes += static_cast<std::int64_t>(e.file_size());
  ledger::LifeRecorder(lab).transfer(box.id, ledger::Direction::Push, "run folder (recipe, data) -> " + workDir,
                                     stagedBytes, stagedAt, ledger::epochNow());
  remote::RemoteRun run(session, workDir, staged.eventsFile);
  run.launch(command);
  store.touchBox(box.id, "run", "remote train (" + engine + ") in " + workDir);
  ctx.err << "launched in " << box.name << ":" << workDir << " (detached; a dropped connection does not stop it)\n";
  followAndReport(args, ctx, session, run, box, lab, engine, recipe);
  return 0;
}

}  // namespace

void addRemoteCommands(std::vector<cli::Command>& commands) {
  const cli::OptionSpec lab{"--lab", true, "lab with the box (default $CROSSLAB_HOME/home)"};
  const cli::OptionSpec accept{"--accept-new", false, "trust an unknown host key"};
  const cli::OptionSpec known{"--known-hosts", true, "known_hosts file"};
  commands.push_back({"remote train",
                      "--box NAME (--engine crosslab|llamafactory) --recipe FILE --data FILE [--workdir DIR] [--dry-run]",
                      "train on a box, detached, with the dead-run watchdog on its log",
                      {{"--box", true, "box to train on", true},
                       {"--engine", true, "crosslab or llamafactory", true},
                       {"--recipe", true, "recipe JSON (lora_rank, learning_rate, cutoff_len, deepspeed …)", true},
                       {"--data", true, "training set (LLaMA-Factory alpaca/sharegpt JSON)", true},
                       {"--workdir", true, "folder on the box (default crosslab-runs/<time>)"},
                       {"--launcher", true,
                        "program that replaces llamafactory-cli / crosslab-cli on the box (e.g. its absolute path)"},
                       {"--max-steps", true, "stop after N optimizer steps (a smoke run before the real one)"},
                       {"--poll-ms", true, "how often to read the run's log (default 5000)"},
                       {"--stall-s", true,
                        "stalled after this long without progress (default 60; at least 4x the typical step gap); "
                        "before the first step 900 s, or --stall-s when given"},
                       {"--keep-on-failure", false, "do not kill a run the watchdog declared dead"},
                       {"--fetch", true, "local folder for the adapter when the run finishes"},
                       {"--dry-run", false, "print the generated files and command; run nothing"},
                       {"--json", false, "print the result as JSON"},
                       lab, accept, known},
                      remoteTrain});
  commands.push_back({"remote serve",
                      "--box NAME (--engine crosslab|vllm|vllm-docker|mlx) --model PATH [--adapters N=PATH,…] [--port P]",
                      "start a server on a box, wait for /health through the tunnel, print its local URL",
                      {{"--box", true, "box to serve on", true},
                       {"--engine", true, "crosslab, vllm, vllm-docker or mlx", true},
                       {"--model", true, "model path (or hub id) on the box", true},
                       {"--adapters", true, "NAME=PATH[,NAME=PATH] PEFT folders on the box"},
                       {"--port", true, "server port on the box's 127.0.0.1 (default 8000)"},
                       {"--local-port", true, "local end of the tunnel (default: any free port)"},
                       {"--tp", true, "--tensor-parallel-size"},
                       {"--max-model-len", true, "--max-model-len"},
                       {"--enforce-eager", false, "--enforce-eager (runtime LoRA on some stacks)"},
                       {"--workers", true, "BOX[,BOX]: start a Ray cluster across these boxes (vLLM TP over boxes)"},
                       {"--head-ip", true, "address the workers reach the head box at (default: its host)"},
                       {"--launcher", true, "shell line that replaces the generated command"},
                       {"--program", true, "the engine's program on the box (e.g. an absolute crosslab-cli path)"},
                       {"--merge", true, "NAME: serve the one adapter NAME merged into the weights (crosslab)"},
                       {"--workdir", true, "folder on the box for serve.log (default crosslab-serve)"},
                       {"--health-timeout", true, "seconds to wait for /health (default 900)"},
                       {"--for", true, "keep the tunnel this many seconds (default: until Ctrl-C)"},
                       {"--stop-on-exit", false, "stop the server when the tunnel closes"},
                       {"--dry-run", false, "print the command; run nothing"},
                       lab, accept, known},
                      remoteServe});
}

}  // namespace crosslab::backends
