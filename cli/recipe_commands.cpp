#include <ostream>
#include <sstream>

#include "cli/command.h"
#include "cli/recipe_flags.h"

namespace crosslab::cli {
namespace {

// The recipe's flags, from its field table: --lora-rank -> lora_rank, help text and all.
std::vector<std::pair<OptionSpec, std::string>> flagTable() {
  std::vector<std::pair<OptionSpec, std::string>> t;
  for (const auto& f : train::recipeFields())
    if (f.uses(train::RecipeField::Flag)) t.push_back({{f.flag, true, f.help}, f.key});
  return t;
}

int recipeShow(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  std::vector<std::string> warnings;
  const auto r = recipeFromArgs(args, &warnings);
  for (const auto& w : warnings) ctx.err << "warning: " << w << "\n";
  const std::int64_t examples = args.value("--examples") ? std::stoll(*args.value("--examples")) : 290;
  ctx.out << "LoRA r " << r.loraRank << ", alpha " << r.loraAlpha << " (scaling " << r.loraScaling() << ")"
          << (r.useRslora ? ", rsLoRA" : "") << ", targets " << (r.loraTargets.size() == 7 ? "all linear" : "")
          << "\n";
  ctx.out << "lr " << r.learningRate << " " << r.lrSchedulerType << ", warmup " << r.warmupRatio << ", "
          << r.numTrainEpochs << " epochs, " << r.dtype << ", cutoff " << r.cutoffLen << "\n";
  ctx.out << "effective batch " << r.effectiveBatch() << " = " << r.perDeviceTrainBatchSize << " micro × "
          << r.gradientAccumulationSteps << " accumulation × " << r.devices << " devices\n";
  ctx.out << examples << " examples -> " << r.stepsPerEpoch(examples) << " steps per epoch -> "
          << r.totalSteps(examples) << " steps\n";
  for (const auto& p : r.validate()) ctx.out << "problem: " << p << "\n";
  return r.validate().empty() ? 0 : 1;
}

int recipeExport(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const std::string format = args.value("--format").value_or("json");
  if (format != "json" && format != "llamafactory") throw UsageError("--format must be json or llamafactory");
  std::vector<std::string> warnings;
  const auto r = recipeFromArgs(args, &warnings);
  for (const auto& w : warnings) ctx.err << "warning: " << w << "\n";
  const auto problems = r.validate();
  if (!problems.empty()) throw std::runtime_error("invalid recipe: " + problems.front());
  ctx.out << (format == "json" ? train::recipeToJson(r) : train::recipeToLlamaFactoryYaml(r));
  return 0;
}

}  // namespace

std::vector<OptionSpec> recipeOptions() {
  std::vector<OptionSpec> out = {{"--recipe", true, "recipe file (.json, or LLaMA-Factory .yaml)"}};
  for (const auto& [spec, key] : flagTable()) out.push_back(spec);
  return out;
}

train::Recipe recipeFromArgs(const Args& args, std::vector<std::string>* warnings) {
  train::Recipe r = args.value("--recipe") ? train::loadRecipeFile(*args.value("--recipe")) : train::Recipe::labDefaults();
  if (warnings)
    for (const auto& [k, v] : r.unknownKeys)
      warnings->push_back("recipe key '" + k + "' is not used by crosslab's trainer (kept for export)");
  for (const auto& [spec, key] : flagTable()) {
    const auto v = args.value(spec.name);
    if (!v) continue;
    try {
      train::applyOverrides(r, {{key, *v}});
    } catch (const std::exception& e) {  // a malformed flag value is a usage error (a bad file is not)
      throw UsageError(spec.name + " (" + e.what() + ")");
    }
  }
  return r;
}

void addRecipeCommands(std::vector<Command>& commands) {
  auto showOptions = recipeOptions();
  showOptions.push_back({"--examples", true, "training examples, for the step count (default 290)"});
  commands.push_back({"recipe show", "[--recipe FILE] [recipe flags] [--examples N]",
                      "show a LoRA recipe (the lab defaults unless a file or flags say otherwise) and its step count",
                      showOptions, recipeShow});
  auto exportOptions = recipeOptions();
  exportOptions.push_back({"--format", true, "json (default) or llamafactory (LoRA SFT YAML)"});
  commands.push_back({"recipe export", "--format json|llamafactory [--recipe FILE] [recipe flags]",
                      "print a recipe as crosslab JSON or LLaMA-Factory YAML", exportOptions, recipeExport});
}

}  // namespace crosslab::cli
