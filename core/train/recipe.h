#pragma once
// A LoRA SFT recipe: the lab's defaults, the step arithmetic, and every form it takes —
// our JSON, LLaMA-Factory's YAML, command-line flags and the New Run dialog — all from
// one field table (recipeFields()), so a key means the same thing everywhere. The venue
// fields (GPUs, DeepSpeed stage and offload, launcher) are part of it: the same recipe
// runs on this machine or on a rented box.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace crosslab::train {

struct Recipe {
  // Model and data
  std::string modelPath;           // model_name_or_path (a folder here, a path or hub id on a box)
  std::string dataset;             // dataset name(s) in dataset_info.json, comma-separated
  std::string datasetDir = "data"; // dataset_dir
  std::string datasetFile;         // ours: one alpaca/sharegpt file instead of dataset_info.json
  std::string formatting = "auto"; // ours: alpaca | sharegpt | auto (by keys) for datasetFile
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
  int devices = 1;                 // data-parallel processes (GPUs); LLaMA-Factory takes it from the launcher
  std::string lrSchedulerType = "linear";  // linear | cosine | constant
  double warmupRatio = 0.0;
  double maxGradNorm = 1.0;
  std::uint64_t seed = 42;
  std::string dtype = "bf16";      // bf16 | f32
  std::int64_t maxSteps = -1;      // > 0 overrides epochs, as in HF
  bool gradientCheckpointing = true;  // LLaMA-Factory's default

  // Logging, checkpoints, eval
  int loggingSteps = 1;
  int saveSteps = 0;               // 0: only at the end
  double valSize = 0.0;            // held-out fraction for eval loss
  int evalSteps = 0;               // 0: no periodic eval
  std::string outputDir;

  // Venue: how a box runs it
  int deepspeedStage = 0;          // 0 (none), 2 or 3: ZeRO stage (LLaMA-Factory + DeepSpeed)
  bool deepspeedOffload = false;   // optimizer and parameters offloaded to host RAM
  std::string launcher;            // program on the box instead of crosslab-cli / llamafactory-cli

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
  // LLaMA-Factory's name for the DeepSpeed JSON of this stage/offload
  // ("ds_z3_offload_config.json"), empty without DeepSpeed.
  std::string deepspeedConfigName() const;

  // Problems a user must fix before a run starts; empty when valid.
  std::vector<std::string> validate() const;
};

// One row of the field table: a recipe key and every way it is spelled and shown.
struct RecipeField {
  enum class Kind { Text, Path, Int, Real, Bool, Choice, Targets };
  enum Use : unsigned { Json = 1, Yaml = 2, Flag = 4, Dialog = 8 };
  std::string key;              // JSON key (LLaMA-Factory's where it has one)
  Kind kind = Kind::Text;
  unsigned use = Json;
  std::string flag;             // command-line flag ("--lora-rank"), empty without one
  std::string label;            // the New Run dialog's label
  std::string help;             // flag help and the dialog's tooltip
  std::string group;            // dialog group: Data, LoRA, Optimisation, Logging, Venue
  double min = 0, max = 0;      // Int/Real bounds (inclusive); max <= min: unbounded above
  int decimals = 0;             // Real: digits the dialog shows
  std::vector<std::string> choices;  // Choice
  std::vector<std::string> aliases;  // older spellings read from JSON ("gpus", "model")
  bool uses(Use u) const { return (use & u) != 0; }
};

// Every recipe field, in the order forms show them.
const std::vector<RecipeField>& recipeFields();
// The field of `key` (or an alias), or nullptr.
const RecipeField* findRecipeField(const std::string& key);
// A field's value as text, as a flag or a YAML scalar spells it ("16", "1.0e-4", "true",
// "all", "bf16").
std::string recipeFieldText(const Recipe& r, const RecipeField& f);
// Sets a field from text (a flag value, a dialog entry). Throws std::runtime_error naming
// the key and the problem.
void setRecipeField(Recipe& r, const RecipeField& f, const std::string& text);

// Our JSON form: the same key names as LLaMA-Factory where one exists.
std::string recipeToJson(const Recipe& r);
Recipe recipeFromJson(const std::string& text);

// LLaMA-Factory LoRA SFT YAML (llamafactory-cli train FILE) — the one writer. DeepSpeed
// is named by its LLaMA-Factory file name (written beside the YAML by whoever stages the
// run); our own keys that LLaMA-Factory would refuse (devices, launcher, dataset_file …)
// ride in a `# crosslab:` comment, so YAML -> recipe -> YAML loses nothing.
// Keys absent from a file take LLaMA-Factory's own defaults (lora_rank 8, cutoff_len 2048,
// …), since that is what it runs.
std::string recipeToLlamaFactoryYaml(const Recipe& r);
Recipe recipeFromLlamaFactoryYaml(const std::string& text);

// Sets fields from text values keyed by recipe key ("lora_rank" -> "8"), as command-line
// flags give them; "dtype" takes bf16|f32. Throws naming a bad key/value.
void applyOverrides(Recipe& r, const std::map<std::string, std::string>& values);

// Reads FILE.json / FILE.yaml / FILE.yml by extension. Throws std::runtime_error naming the
// file and the problem.
Recipe loadRecipeFile(const std::string& path);

// "1.0e-4": a float PyYAML reads back as a float (it needs a dot and a signed exponent).
std::string yamlFloat(double v);

}  // namespace crosslab::train
