#pragma once
// A LoRA SFT recipe: the lab's defaults, the step arithmetic, and conversion to and from
// our JSON and LLaMA-Factory's YAML (so the same file runs locally and on a rented box).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace crosslab::train {

struct Recipe {
  // Model and data
  std::string modelPath;           // model_name_or_path
  std::string dataset;             // dataset name(s) in dataset_info.json, comma-separated
  std::string datasetDir = "data"; // dataset_dir
  std::string templateName = "llama3";
  int cutoffLen = 4096;            // tokens

  // LoRA
  int loraRank = 16;
  int loraAlpha = 32;              // LLaMA-Factory: 2 × rank when unset
  double loraDropout = 0.0;
  std::vector<std::string> loraTargets = {"q_proj", "k_proj", "v_proj", "o_proj",
                                          "gate_proj", "up_proj", "down_proj"};
  bool useRslora = false;          // scaling alpha/sqrt(r) instead of alpha/r

  // Optimisation
  double learningRate = 1e-4;
  double numTrainEpochs = 3.0;
  int perDeviceTrainBatchSize = 1;
  int gradientAccumulationSteps = 8;
  int devices = 1;                 // data-parallel processes (GPUs)
  std::string lrSchedulerType = "linear";  // linear | cosine | constant
  double warmupRatio = 0.0;
  double maxGradNorm = 1.0;
  std::uint64_t seed = 42;
  std::string dtype = "bf16";      // bf16 | f32
  std::int64_t maxSteps = -1;      // > 0 overrides epochs, as in HF

  // Logging, checkpoints, eval
  int loggingSteps = 1;
  int saveSteps = 0;               // 0: only at the end
  double valSize = 0.0;            // held-out fraction for eval loss
  int evalSteps = 0;               // 0: no periodic eval
  std::string outputDir;
  std::string deepspeed;           // path of a DeepSpeed JSON, remote runs only

  // Keys read from a file that this recipe does not model, kept verbatim (as YAML/JSON
  // scalars in text form) so that export writes them back and the user is told.
  std::map<std::string, std::string> unknownKeys;

  // The "Beyond CUDA" lab recipe: r 16, alpha 32, all linear targets, lr 1e-4, 3 epochs,
  // effective batch 8, bf16, cutoff 4096.
  static Recipe labDefaults();

  int effectiveBatch() const { return perDeviceTrainBatchSize * gradientAccumulationSteps * devices; }
  // Optimizer steps per epoch: ceil(examples / effective batch) (the last, partial
  // accumulation is a step, as in current transformers). 290 / 8 -> 37.
  std::int64_t stepsPerEpoch(std::int64_t examples) const;
  // epochs × steps per epoch (fractional epochs round up), or maxSteps when set. 290 -> 111.
  std::int64_t totalSteps(std::int64_t examples) const;
  std::int64_t warmupSteps(std::int64_t examples) const;
  double loraScaling() const;

  // Problems a user must fix before a run starts; empty when valid.
  std::vector<std::string> validate() const;
};

// Our JSON form: the same key names as LLaMA-Factory where one exists.
std::string recipeToJson(const Recipe& r);
Recipe recipeFromJson(const std::string& text);

// LLaMA-Factory LoRA SFT YAML (llamafactory-cli train FILE). Keys absent from the file take
// LLaMA-Factory's own defaults (lora_rank 8, cutoff_len 2048, …), since that is what it runs.
std::string recipeToLlamaFactoryYaml(const Recipe& r);
Recipe recipeFromLlamaFactoryYaml(const std::string& text);

// Sets fields from text values keyed by LLaMA-Factory key names ("lora_rank" -> "8"),
// as command-line flags give them; "dtype" takes bf16|f32. Throws naming a bad key/value.
void applyOverrides(Recipe& r, const std::map<std::string, std::string>& values);

// Reads FILE.json / FILE.yaml / FILE.yml by extension. Throws std::runtime_error naming the
// file and the problem.
Recipe loadRecipeFile(const std::string& path);

// "1.0e-4": a float PyYAML reads back as a float (it needs a dot and a signed exponent).
std::string yamlFloat(double v);

}  // namespace crosslab::train
