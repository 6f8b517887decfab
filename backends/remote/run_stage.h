#pragma once
// What a run needs on the host that trains it, staged in a local folder first (so the
// secret guard sees every byte before it leaves) and the one command line that starts
// it: our engine (`crosslab-cli train --recipe recipe.json`) or LLaMA-Factory
// (`llamafactory-cli train train.yaml`, DeepSpeed JSON beside it, dataset_info.json).
// The CLI's `remote train` and the window's New Run stage runs the same way.

#include <filesystem>
#include <string>

#include "core/train/recipe.h"

namespace crosslab::remote {

enum class Engine { Crosslab, LlamaFactory };
const char* toString(Engine e);  // "crosslab", "llamafactory"
Engine engineFromString(const std::string& text);  // throws std::invalid_argument

struct StagedRun {
  std::string command;     // run from the work folder
  std::string eventsFile;  // relative to the work folder
  std::string outputDir;   // relative to the work folder: adapter, checkpoints
};

// Writes into `stage` the files the run reads (relative to the work folder it will run
// in): the recipe as the engine reads it, with model_name_or_path = `modelOnHost` and
// the data copied to data/<file>. `program` replaces crosslab-cli / llamafactory-cli
// (the recipe's launcher when empty): shell words, as typed (a path, or a program and
// its leading arguments).
StagedRun stageRun(const train::Recipe& recipe, Engine engine, const std::filesystem::path& dataFile,
                   const std::string& modelOnHost, const std::filesystem::path& stage, const std::string& program = {});

}  // namespace crosslab::remote
