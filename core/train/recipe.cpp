#include "core/train/recipe.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "core/tokenizer/utf8.h"
#include "core/util/printable.h"

namespace crosslab::train {
namespace {

using nlohmann::json;
using Kind = RecipeField::Kind;
constexpr unsigned kJson = RecipeField::Json, kYaml = RecipeField::Yaml, kFlag = RecipeField::Flag,
                   kDialog = RecipeField::Dialog, kAll = kJson | kYaml | kFlag | kDialog;

const std::vector<std::string>& allTargets() {
  static const std::vector<std::string> t = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return t;
}

// Keys LLaMA-Factory's SFT LoRA YAML carries that fix the kind of run rather than tune it.
const std::set<std::string> kFixedKeys = {"stage", "do_train", "finetuning_type", "overwrite_output_dir",
                                          "plot_loss", "report_to"};

std::string joinTargets(const std::vector<std::string>& t) {
  if (t == allTargets()) return "all";
  std::string out;
  for (const auto& s : t) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::vector<std::string> parseTargets(const std::string& text) {
  std::string s = text;
  s.erase(std::remove_if(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); }), s.end());
  if (s == "all") return allTargets();
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string t; std::getline(in, t, ',');) {
    if (std::find(allTargets().begin(), allTargets().end(), t) == allTargets().end())
      throw std::runtime_error("lora_target: unknown module '" + t + "' (expected all or q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj)");
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  if (out.empty()) throw std::runtime_error("lora_target is empty");
  // Keep the canonical order so that equal sets compare equal.
  std::vector<std::string> ordered;
  for (const auto& a : allTargets())
    if (std::find(out.begin(), out.end(), a) != out.end()) ordered.push_back(a);
  return ordered;
}

template <typename T>
T as(const json& v, const std::string& key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // A whole number that fits T: 4e29 (a JSON number past int64 reads as a double) or 2.5 is
    // refused here rather than cast (out of range, that cast is undefined: fuzz finding).
    if (v.is_number()) {
      const double d = v.get<double>(), top = std::ldexp(1.0, std::numeric_limits<T>::digits);
      const double bottom = std::numeric_limits<T>::is_signed ? -top : 0.0;
      if (!std::isfinite(d) || d != std::floor(d) || d < bottom || d >= top)
        throw std::runtime_error(key + ": expected a whole number in range, got " + v.dump());
      if (v.is_number_float()) return static_cast<T>(d);
    }
  }
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(key + ": expected " +
                             (std::is_same_v<T, bool> ? "true/false" : std::is_same_v<T, std::string> ? "text" : "a number") +
                             ", got " + v.dump());
  }
}

// A key or text value from a file: UTF-8 (a YAML escape such as "\x85" decodes to a lone
// byte) without control characters other than tab and line breaks in values (a key holding
// \x01 or NUL was written back as YAML that read differently). Both end up in our JSON, in
// the YAML written for a box and in one-line messages.
void checkText(const std::string& s, const std::string& key, bool isKey) {
  const std::string what = isKey ? "recipe key '" + util::printable(s) + "'" : key;
  if (tokenizer::validUtf8Prefix(s) != s.size()) throw std::runtime_error(what + ": not valid UTF-8");
  for (unsigned char c : s)
    if ((c < 0x20 && (isKey || (c != '\t' && c != '\n' && c != '\r'))) || c == 0x7f)
      throw std::runtime_error(what + ": holds a control character");
}

// A field of the table with how to read and write it on a Recipe.
struct Entry {
  RecipeField field;
  std::function<json(const Recipe&)> get;
  std::function<void(Recipe&, const json&)> set;
};

RecipeField F(const char* key, Kind kind, unsigned use, const char* flag, const char* label, const char* group,
              const char* help, double min = 0, double max = 0, int decimals = 0) {
  RecipeField f;
  f.key = key;
  f.kind = kind;
  f.use = use;
  f.flag = flag;
  f.label = label;
  f.group = group;
  f.help = help;
  f.min = min;
  f.max = max;
  f.decimals = decimals;
  return f;
}

template <typename T>
Entry member(RecipeField f, T Recipe::*m) {
  const std::string key = f.key;
  return {std::move(f), [m](const Recipe& r) { return json(r.*m); },
          [m, key](Recipe& r, const json& v) { r.*m = as<T>(v, key); }};
}

Entry with(Entry e, std::vector<std::string> choices, std::vector<std::string> aliases = {}) {
  e.field.choices = std::move(choices);
  e.field.aliases = std::move(aliases);
  return e;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> t = [] {
    std::vector<Entry> e;
    // Model and data
    e.push_back(with(member(F("model_name_or_path", Kind::Path, kAll, "--model", "Base model", "Data",
                              "base model folder (model_name_or_path; a path or hub id on a box)"),
                            &Recipe::modelPath),
                     {}, {"model"}));
    e.push_back(member(F("dataset_file", Kind::Path, kJson | kDialog, "", "Training data", "Data",
                         "alpaca/sharegpt JSON(L) file (ours; LLaMA-Factory gets a dataset_info.json for it)"),
                       &Recipe::datasetFile));
    e.push_back(with(member(F("formatting", Kind::Choice, kJson, "", "Data format", "Data",
                              "alpaca, sharegpt, or auto (by the records' keys)"),
                            &Recipe::formatting),
                     {"auto", "alpaca", "sharegpt"}));
    e.push_back(member(F("dataset", Kind::Text, kJson | kYaml | kFlag | kDialog, "--dataset", "Dataset", "Data",
                         "dataset name(s) in dataset_info.json"),
                       &Recipe::dataset));
    e.push_back(member(F("dataset_dir", Kind::Text, kJson | kYaml | kFlag, "--dataset-dir", "Dataset folder", "Data",
                         "folder holding dataset_info.json"),
                       &Recipe::datasetDir));
    e.push_back(with(member(F("template", Kind::Choice, kJson | kYaml, "", "Template", "Data", "chat template"),
                            &Recipe::templateName),
                     {"llama3"}));
    e.push_back(member(F("cutoff_len", Kind::Int, kAll, "--cutoff-len", "Cutoff (tokens)", "Data",
                         "tokens per example (lab: 4096)", 2, 1 << 20),
                       &Recipe::cutoffLen));
    // LoRA
    e.push_back(member(F("lora_rank", Kind::Int, kAll, "--lora-rank", "LoRA rank", "LoRA", "LoRA rank r (lab: 16)", 1, 1024),
                       &Recipe::loraRank));
    e.push_back(member(F("lora_alpha", Kind::Int, kAll, "--lora-alpha", "LoRA alpha", "LoRA", "LoRA alpha (lab: 32)", 1, 4096),
                       &Recipe::loraAlpha));
    e.push_back(member(F("lora_dropout", Kind::Real, kAll, "--lora-dropout", "LoRA dropout", "LoRA", "LoRA dropout (lab: 0)",
                         0, 0.99, 2),
                       &Recipe::loraDropout));
    e.push_back({F("lora_target", Kind::Targets, kAll, "--lora-target", "Targets", "LoRA",
                   "all, or a comma list of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"),
                 [](const Recipe& r) { return json(joinTargets(r.loraTargets)); },
                 [](Recipe& r, const json& v) { r.loraTargets = parseTargets(as<std::string>(v, "lora_target")); }});
    e.push_back(member(F("use_rslora", Kind::Bool, kAll, "--use-rslora", "rsLoRA", "LoRA",
                         "scale by alpha/sqrt(r) instead of alpha/r"),
                       &Recipe::useRslora));
    // Optimisation
    e.push_back(member(F("learning_rate", Kind::Real, kAll, "--learning-rate", "Learning rate", "Optimisation",
                         "peak learning rate (lab: 1e-4)", 1e-8, 1, 7),
                       &Recipe::learningRate));
    e.push_back(member(F("num_train_epochs", Kind::Real, kAll, "--num-train-epochs", "Epochs", "Optimisation",
                         "epochs (lab: 3)", 0.01, 1000, 2),
                       &Recipe::numTrainEpochs));
    e.push_back(member(F("per_device_train_batch_size", Kind::Int, kAll, "--per-device-train-batch-size",
                         "Micro-batch", "Optimisation", "micro-batch per device", 1, 1024),
                       &Recipe::perDeviceTrainBatchSize));
    e.push_back(member(F("gradient_accumulation_steps", Kind::Int, kAll, "--gradient-accumulation-steps",
                         "Accumulation", "Optimisation", "micro-batches per optimizer step", 1, 4096),
                       &Recipe::gradientAccumulationSteps));
    e.push_back(with(member(F("lr_scheduler_type", Kind::Choice, kAll, "--lr-scheduler-type", "Scheduler",
                              "Optimisation", "linear, cosine or constant"),
                            &Recipe::lrSchedulerType),
                     {"linear", "cosine", "constant"}));
    e.push_back(member(F("warmup_ratio", Kind::Real, kAll, "--warmup-ratio", "Warmup ratio", "Optimisation",
                         "fraction of steps spent warming up", 0, 0.99, 3),
                       &Recipe::warmupRatio));
    e.push_back(member(F("max_grad_norm", Kind::Real, kJson | kYaml | kFlag, "--max-grad-norm", "Max grad norm",
                         "Optimisation", "gradient clipping norm (0: none)", 0, 1e6, 2),
                       &Recipe::maxGradNorm));
    e.push_back(member(F("seed", Kind::Int, kAll, "--seed", "Seed", "Optimisation",
                         "seed of data order and initialisation", 0, 1 << 30),
                       &Recipe::seed));
    // bf16 is LLaMA-Factory's spelling in files; dtype is the flag's and the dialog's.
    e.push_back({F("bf16", Kind::Bool, kJson | kYaml, "", "bf16", "Optimisation", "bf16 mixed precision"),
                 [](const Recipe& r) { return json(r.dtype == "bf16"); },
                 [](Recipe& r, const json& v) { r.dtype = as<bool>(v, "bf16") ? "bf16" : "f32"; }});
    e.push_back(with({F("dtype", Kind::Choice, kFlag | kDialog, "--dtype", "Precision", "Optimisation", "bf16 or f32"),
                      [](const Recipe& r) { return json(r.dtype); },
                      [](Recipe& r, const json& v) {
                        const auto d = as<std::string>(v, "dtype");
                        if (d != "bf16" && d != "f32") throw std::runtime_error("dtype must be bf16 or f32, got '" + d + "'");
                        r.dtype = d;
                      }},
                     {"bf16", "f32"}));
    e.push_back(member(F("max_steps", Kind::Int, kJson | kYaml | kFlag, "--max-steps", "Max steps", "Optimisation",
                         "stop after N optimizer steps (-1: by epochs)", -1, 1e12),
                       &Recipe::maxSteps));
    e.push_back(member(F("gradient_checkpointing", Kind::Bool, kJson | kFlag, "--gradient-checkpointing",
                         "Gradient checkpointing", "Optimisation",
                         "recompute activations in backward (LLaMA-Factory's default; false: disable_gradient_checkpointing)"),
                       &Recipe::gradientCheckpointing));
    // Logging, checkpoints, eval
    e.push_back(member(F("logging_steps", Kind::Int, kAll, "--logging-steps", "Log every", "Logging",
                         "an events line every N steps", 1, 100000),
                       &Recipe::loggingSteps));
    e.push_back(member(F("save_steps", Kind::Int, kAll, "--save-steps", "Checkpoint every", "Logging",
                         "a checkpoint every N steps (0: at the end only)", 0, 100000),
                       &Recipe::saveSteps));
    e.push_back(member(F("val_size", Kind::Real, kAll, "--val-size", "Eval share", "Logging",
                         "held-out fraction for eval loss (default 0)", 0, 0.99, 3),
                       &Recipe::valSize));
    e.push_back(member(F("eval_steps", Kind::Int, kAll, "--eval-steps", "Eval every", "Logging",
                         "eval loss every N steps (needs a held-out share)", 0, 100000),
                       &Recipe::evalSteps));
    e.push_back(member(F("output_dir", Kind::Text, kJson | kYaml, "", "Output folder", "Logging",
                         "run folder (adapter, events, checkpoints)"),
                       &Recipe::outputDir));
    // Venue
    e.push_back(with(member(F("devices", Kind::Int, kJson | kFlag | kDialog, "--devices", "GPUs", "Venue",
                              "data-parallel processes (GPUs) on the box", 1, 64),
                            &Recipe::devices),
                     {}, {"gpus"}));
    e.push_back(with(member(F("deepspeed_stage", Kind::Int, kJson | kFlag | kDialog, "--deepspeed-stage",
                              "DeepSpeed ZeRO", "Venue", "0 (none), 2 or 3 (LLaMA-Factory + DeepSpeed)", 0, 3),
                            &Recipe::deepspeedStage),
                     {"0", "2", "3"}));
    e.push_back(member(F("deepspeed_offload", Kind::Bool, kJson | kFlag | kDialog, "--deepspeed-offload",
                         "CPU offload", "Venue", "offload optimizer and parameters to host RAM (ZeRO 2/3)"),
                       &Recipe::deepspeedOffload));
    e.push_back(member(F("launcher", Kind::Text, kJson | kDialog, "", "Program on the box", "Venue",
                         "program on the box instead of crosslab-cli / llamafactory-cli (empty: on its PATH)"),
                       &Recipe::launcher));
    return e;
  }();
  return t;
}

const Entry* entryOf(const std::string& key) {
  for (const auto& e : entries())
    if (e.field.key == key || std::find(e.field.aliases.begin(), e.field.aliases.end(), key) != e.field.aliases.end())
      return &e;
  return nullptr;
}

// "ds_z3_offload_config.json" (any folder) -> stage 3, offload.
bool parseDeepspeedName(const std::string& path, int& stage, bool& offload) {
  static const std::regex re(R"((^|/)ds_z([0-3])(_offload)?_config\.json$)");
  std::smatch m;
  if (!std::regex_search(path, m, re)) return false;
  stage = std::stoi(m[2].str());
  offload = m[3].matched;
  return true;
}

// Applies a flat object onto `r`; keys it does not know go to unknownKeys.
void applyObject(Recipe& r, const json& j, bool alphaGiven) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    checkText(k, k, true);
    if (v.is_string()) checkText(v.get_ref<const std::string&>(), k, false);
    if (v.is_null()) continue;  // LLaMA-Factory writes None for "unset"
    if (const Entry* e = entryOf(k)) {
      e->set(r, v);
    } else if (k == "deepspeed") {
      // A DeepSpeed JSON path (LLaMA-Factory), or the older "none" / "z3" / "z3_offload".
      const std::string d = as<std::string>(v, "deepspeed");
      if (d == "none" || d.empty()) {
        r.deepspeedStage = 0;
        r.deepspeedOffload = false;
      } else if (d == "z2" || d == "z3" || d == "z2_offload" || d == "z3_offload") {
        r.deepspeedStage = d[1] - '0';
        r.deepspeedOffload = d.find("offload") != std::string::npos;
      } else if (!parseDeepspeedName(d, r.deepspeedStage, r.deepspeedOffload)) {
        r.unknownKeys[k] = d;  // a hand-written config: kept and written back as is
      }
    } else if (k == "disable_gradient_checkpointing") {
      r.gradientCheckpointing = !as<bool>(v, k);
    } else if (k == "save_strategy" && v.is_string() && v.get<std::string>() == "no") {
      r.saveSteps = 0;
    } else if (kFixedKeys.count(k)) {
      continue;
    } else {
      r.unknownKeys[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  if (!alphaGiven) r.loraAlpha = 2 * r.loraRank;
}

// LLaMA-Factory's (and HF TrainingArguments') defaults for keys a YAML file leaves out.
Recipe llamaFactoryDefaults() {
  Recipe r = Recipe::labDefaults();
  r.cutoffLen = 2048;
  r.loraRank = 8;
  r.loraAlpha = 16;
  r.learningRate = 5e-5;
  r.perDeviceTrainBatchSize = 8;
  r.gradientAccumulationSteps = 1;
  r.dtype = "f32";
  r.loggingSteps = 500;
  r.saveSteps = 500;
  return r;
}

// A text value as the JSON value of the field's kind (YAML scalars and flags are text).
json typedScalar(const YAML::Node& node, const std::string& key) {
  const Entry* e = entryOf(key);
  const RecipeField* f = e ? &e->field : nullptr;
  if (!node.IsScalar()) {
    if (f && f->kind == Kind::Targets && node.IsSequence()) {
      std::string joined;
      for (const auto& item : node) joined += (joined.empty() ? "" : ",") + item.as<std::string>();
      return joined;
    }
    if (f) throw std::runtime_error(key + ": expected a single value");
    YAML::Emitter em;
    em << YAML::Flow << node;
    return std::string(em.c_str());
  }
  const std::string text = node.Scalar();
  if (text == "null" || text == "~" || text == "None") return nullptr;
  if (!f) {
    if (key == "disable_gradient_checkpointing") return node.as<bool>(false);
    return text;
  }
  try {
    switch (f->kind) {
      case Kind::Text:
      case Kind::Path:
      case Kind::Choice:
      case Kind::Targets: return text;
      case Kind::Int: return node.as<std::int64_t>();
      case Kind::Real: return node.as<double>();
      case Kind::Bool: return node.as<bool>();
    }
  } catch (const YAML::Exception&) {
    throw std::runtime_error(key + ": cannot read '" + text + "' as " +
                             (f->kind == Kind::Bool ? "true/false" : f->kind == Kind::Int ? "a whole number" : "a number"));
  }
  return text;
}

// Our keys that LLaMA-Factory's YAML cannot carry: those that differ from the defaults.
json crosslabExtras(const Recipe& r) {
  const Recipe d = Recipe::labDefaults();
  json extras = json::object();
  for (const auto& e : entries())
    if (e.field.uses(RecipeField::Json) && !e.field.uses(RecipeField::Yaml) && e.get(r) != e.get(d))
      extras[e.field.key] = e.get(r);
  return extras;
}

constexpr const char* kExtrasComment = "# crosslab: ";

}  // namespace

const std::vector<RecipeField>& recipeFields() {
  static const std::vector<RecipeField> f = [] {
    std::vector<RecipeField> out;
    for (const auto& e : entries()) out.push_back(e.field);
    return out;
  }();
  return f;
}

const RecipeField* findRecipeField(const std::string& key) {
  const Entry* e = entryOf(key);
  if (!e) return nullptr;
  for (const auto& f : recipeFields())
    if (f.key == e->field.key) return &f;
  return nullptr;
}

std::string recipeFieldText(const Recipe& r, const RecipeField& f) {
  const Entry* e = entryOf(f.key);
  if (!e) throw std::runtime_error("unknown recipe key '" + f.key + "'");
  const json v = e->get(r);
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_float()) return yamlFloat(v.get<double>());
  if (v.is_number()) return v.dump();
  return v.get<std::string>();
}

void setRecipeField(Recipe& r, const RecipeField& f, const std::string& text) {
  const Entry* e = entryOf(f.key);
  if (!e) throw std::runtime_error("unknown recipe key '" + f.key + "'");
  const json v = typedScalar(YAML::Node(text), f.key);
  if (v.is_null()) throw std::runtime_error(f.key + ": a value is required");
  e->set(r, v);
}

Recipe Recipe::labDefaults() { return Recipe{}; }

std::int64_t Recipe::stepsPerEpoch(std::int64_t examples) const {
  const std::int64_t eb = std::max(1, effectiveBatch());
  return std::max<std::int64_t>(1, (examples + eb - 1) / eb);
}

std::int64_t Recipe::totalSteps(std::int64_t examples) const {
  if (maxSteps > 0) return maxSteps;
  return static_cast<std::int64_t>(std::ceil(numTrainEpochs * static_cast<double>(stepsPerEpoch(examples)) - 1e-9));
}

std::int64_t Recipe::warmupSteps(std::int64_t examples) const {
  return static_cast<std::int64_t>(std::ceil(warmupRatio * static_cast<double>(totalSteps(examples))));
}

double Recipe::loraScaling() const {
  return useRslora ? loraAlpha / std::sqrt(static_cast<double>(loraRank)) : static_cast<double>(loraAlpha) / loraRank;
}

std::string Recipe::deepspeedConfigName() const {
  if (deepspeedStage <= 0) return {};
  return "ds_z" + std::to_string(deepspeedStage) + (deepspeedOffload ? "_offload" : "") + "_config.json";
}

std::vector<std::string> Recipe::validate() const {
  std::vector<std::string> p;
  // Bounds and choices from the field table.
  for (const auto& e : entries()) {
    const RecipeField& f = e.field;
    const json v = e.get(*this);
    if ((f.kind == Kind::Int || f.kind == Kind::Real) && v.is_number()) {
      const double x = v.get<double>();
      if (x < f.min || (f.max > f.min && x > f.max)) {
        std::ostringstream m;
        m << f.key << " must be ";
        if (f.max > f.min) m << "between " << f.min << " and " << f.max;
        else m << "at least " << f.min;
        p.push_back(m.str() + " (got " + recipeFieldText(*this, f) + ")");
      }
    }
    if (!f.choices.empty()) {
      const std::string text = recipeFieldText(*this, f);
      if (std::find(f.choices.begin(), f.choices.end(), text) == f.choices.end()) {
        std::string list;
        for (const auto& c : f.choices) list += (list.empty() ? "" : ", ") + c;
        p.push_back(f.key + " must be one of " + list + " (got '" + text + "')");
      }
    }
  }
  if (loraTargets.empty()) p.push_back("lora_target names no module");
  if (!(learningRate > 0)) p.push_back("learning_rate must be positive");
  if (!(numTrainEpochs > 0) && maxSteps <= 0) p.push_back("num_train_epochs must be positive (or set max_steps)");
  if (maxSteps == 0) p.push_back("max_steps must be positive, or -1 to train by epochs");
  if (deepspeedOffload && deepspeedStage < 2) p.push_back("deepspeed_offload needs ZeRO stage 2 or 3");
  if (evalSteps > 0 && valSize <= 0) p.push_back("eval_steps needs a held-out share (val_size > 0)");
  return p;
}

std::string recipeToJson(const Recipe& r) {
  nlohmann::ordered_json j;
  for (const auto& e : entries())
    if (e.field.uses(RecipeField::Json)) j[e.field.key] = e.get(r);
  for (const auto& [k, v] : r.unknownKeys) j[k] = v;
  return j.dump(2) + "\n";
}

static Recipe recipeFromJsonText(const std::string& text);
static Recipe recipeFromYamlText(const std::string& text);

namespace {

// Keys and values come from the file: the reason stays one printable line whatever they hold.
template <typename F>
Recipe readRecipe(F&& read) {
  try {
    return read();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(util::printable(e.what(), 1000));
  }
}

}  // namespace

Recipe recipeFromJson(const std::string& text) { return readRecipe([&] { return recipeFromJsonText(text); }); }

Recipe recipeFromLlamaFactoryYaml(const std::string& text) {
  return readRecipe([&] { return recipeFromYamlText(text); });
}

static Recipe recipeFromJsonText(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("recipe JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::runtime_error("recipe JSON: expected an object");
  Recipe r = Recipe::labDefaults();
  applyObject(r, j, j.contains("lora_alpha") && !j["lora_alpha"].is_null());
  return r;
}

std::string yamlFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  std::string s = buf;
  const auto e = s.find_first_of("eE");
  std::string mantissa = e == std::string::npos ? s : s.substr(0, e);
  std::string exponent = e == std::string::npos ? "" : s.substr(e + 1);
  if (mantissa.find('.') == std::string::npos) mantissa += ".0";
  if (exponent.empty()) return mantissa;
  if (exponent[0] != '-' && exponent[0] != '+') exponent = "+" + exponent;
  // Strip leading zeros of the exponent ("e-04" -> "e-4"), as Python prints it.
  std::string digits = exponent.substr(1);
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  return mantissa + "e" + exponent[0] + digits;
}

std::string recipeToLlamaFactoryYaml(const Recipe& r) {
  YAML::Emitter out;
  const json extras = crosslabExtras(r);
  if (!extras.empty()) out << YAML::Comment(std::string(kExtrasComment + 2) + extras.dump());
  out << YAML::BeginMap;
  out << YAML::Key << "stage" << YAML::Value << "sft";
  out << YAML::Key << "do_train" << YAML::Value << true;
  out << YAML::Key << "finetuning_type" << YAML::Value << "lora";
  for (const auto& e : entries()) {
    const RecipeField& f = e.field;
    if (!f.uses(RecipeField::Yaml)) continue;
    const json v = e.get(r);
    // Unset optional keys stay out of the file rather than becoming "" or 0.
    if ((v.is_string() && v.get<std::string>().empty()) ||
        ((f.key == "max_steps" || f.key == "eval_steps" || f.key == "val_size") && v.is_number() && v.get<double>() <= 0))
      continue;
    if (f.key == "save_steps" && r.saveSteps == 0) {
      // Ours: no intermediate checkpoints. LLaMA-Factory still saves the final adapter.
      out << YAML::Key << "save_strategy" << YAML::Value << "no";
      continue;
    }
    out << YAML::Key << f.key << YAML::Value;
    if (v.is_boolean()) out << v.get<bool>();
    else if (v.is_number_float()) out << yamlFloat(v.get<double>());
    else if (v.is_number()) out << v.get<std::int64_t>();
    else out << v.get<std::string>();
  }
  if (!r.gradientCheckpointing) out << YAML::Key << "disable_gradient_checkpointing" << YAML::Value << true;
  if (!r.deepspeedConfigName().empty())
    out << YAML::Key << "deepspeed" << YAML::Value << r.deepspeedConfigName();  // staged beside this file
  out << YAML::Key << "overwrite_output_dir" << YAML::Value << true;
  for (const auto& [k, v] : r.unknownKeys) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

static Recipe recipeFromYamlText(const std::string& text) {
  // yaml-cpp takes any bytes; the recipe's keys and values end up in JSON and on a box's disk.
  if (const size_t ok = tokenizer::validUtf8Prefix(text); ok != text.size())
    throw std::runtime_error("recipe YAML: not valid UTF-8 (byte " + std::to_string(ok) + ")");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(std::string("recipe YAML: ") + e.what());
  }
  if (!root.IsMap()) throw std::runtime_error("recipe YAML: expected a mapping of keys to values");
  const auto get = [&](const char* k) { return root[k] ? root[k].as<std::string>("") : std::string(); };
  if (!get("stage").empty() && get("stage") != "sft")
    throw std::runtime_error("recipe YAML: stage '" + get("stage") + "' is not supported (sft)");
  if (!get("finetuning_type").empty() && get("finetuning_type") != "lora")
    throw std::runtime_error("recipe YAML: finetuning_type '" + get("finetuning_type") + "' is not supported (lora)");
  json j = json::object();
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    j[key] = typedScalar(kv.second, key);
  }
  Recipe r = llamaFactoryDefaults();
  applyObject(r, j, j.contains("lora_alpha") && !j["lora_alpha"].is_null());
  // Our own keys, from the comment LLaMA-Factory ignores.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kExtrasComment, 0) != 0) continue;
    const auto extras = json::parse(line.substr(std::string(kExtrasComment).size()), nullptr, false);
    if (!extras.is_object()) throw std::runtime_error("recipe YAML: the '# crosslab:' comment is not a JSON object");
    applyObject(r, extras, true);
  }
  return r;
}

void applyOverrides(Recipe& r, const std::map<std::string, std::string>& values) {
  for (const auto& entry : values) {
    const std::string& key = entry.first;  // a plain reference: lambdas capture it in C++17 (clang)
    const RecipeField* f = findRecipeField(key);
    if (!f) throw std::runtime_error("unknown recipe key '" + key + "'");
    setRecipeField(r, *f, entry.second);
  }
}

Recipe loadRecipeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read recipe " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto dot = path.find_last_of('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  try {
    if (ext == "json") return recipeFromJson(ss.str());
    if (ext == "yaml" || ext == "yml") return recipeFromLlamaFactoryYaml(ss.str());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  throw std::runtime_error("recipe " + path + ": expected a .json, .yaml or .yml file");
}

}  // namespace crosslab::train
