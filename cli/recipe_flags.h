#pragma once
// The recipe flags shared by `recipe show|export` and `train`: each mirrors a recipe key
// (--lora-rank -> lora_rank) and overrides the recipe file or the lab defaults.

#include <vector>

#include "cli/args.h"
#include "core/train/recipe.h"

namespace crosslab::cli {

std::vector<OptionSpec> recipeOptions();

// --recipe FILE (json/yaml) or the lab defaults, then every recipe flag given. Unknown keys
// read from the file are reported on `warnings` (one line each).
train::Recipe recipeFromArgs(const Args& args, std::vector<std::string>* warnings);

}  // namespace crosslab::cli
