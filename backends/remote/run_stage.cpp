#include "backends/remote/run_stage.h"

#include <fstream>
#include <stdexcept>

#include "backends/ssh/ssh_session.h"
#include "core/venues/llamafactory_config.h"

namespace fs = std::filesystem;

namespace crosslab::remote {
namespace {

void writeFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

constexpr const char* kDatasetName = "lab_sft";

}  // namespace

const char* toString(Engine e) { return e == Engine::Crosslab ? "crosslab" : "llamafactory"; }

Engine engineFromString(const std::string& text) {
  if (text == "crosslab") return Engine::Crosslab;
  if (text == "llamafactory") return Engine::LlamaFactory;
  throw std::invalid_argument("engine must be crosslab or llamafactory, got '" + text + "'");
}

StagedRun stageRun(const train::Recipe& recipe, Engine engine, const fs::path& dataFile, const std::string& modelOnHost,
                   const fs::path& stage, const std::string& program) {
  if (!fs::is_regular_file(dataFile)) throw std::runtime_error("no data file at " + dataFile.string());
  if (modelOnHost.empty()) throw std::runtime_error("no model path on the host");
  train::Recipe r = recipe;
  const std::string fileName = dataFile.filename().string();
  r.modelPath = modelOnHost;
  r.outputDir = "output";
  fs::create_directories(stage / "data");
  fs::copy_file(dataFile, stage / "data" / fileName, fs::copy_options::overwrite_existing);
  const std::string prog = !program.empty() ? program : !r.launcher.empty() ? r.launcher : std::string();
  StagedRun s;
  s.outputDir = r.outputDir;
  if (engine == Engine::Crosslab) {
    r.datasetFile = "data/" + fileName;
    r.dataset.clear();
    writeFile(stage / "recipe.json", train::recipeToJson(r));
    s.command = (prog.empty() ? "crosslab-cli" : prog) + " train --recipe recipe.json --out " + r.outputDir;
    s.eventsFile = r.outputDir + "/events.jsonl";
    return s;
  }
  // LLaMA-Factory: dataset_info.json names the file; DeepSpeed's JSON sits beside the YAML.
  r.dataset = kDatasetName;
  r.datasetDir = "data";
  const std::string formatting = venues::dataFormatting(dataFile.string(), r.formatting);
  r.datasetFile.clear();
  writeFile(stage / "data" / "dataset_info.json",
            venues::llamaFactoryDatasetInfo(kDatasetName, fileName, formatting).dump(2) + "\n");
  if (!r.deepspeedConfigName().empty())
    writeFile(stage / r.deepspeedConfigName(), venues::deepspeedConfig(r.deepspeedStage, r.deepspeedOffload).dump(2) + "\n");
  writeFile(stage / "train.yaml", train::recipeToLlamaFactoryYaml(r));
  // LLaMA-Factory's multi-GPU switch: torchrun over every visible GPU.
  const std::string prefix = r.devices > 1 ? "FORCE_TORCHRUN=1 " : "";
  s.command = prefix + (prog.empty() ? "llamafactory-cli" : prog) + " train train.yaml";
  s.eventsFile = r.outputDir + "/trainer_log.jsonl";
  return s;
}

}  // namespace crosslab::remote
