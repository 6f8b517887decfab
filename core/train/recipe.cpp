#include "core/train/recipe.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/tokenizer/utf8.h"
#include "core/util/printable.h"

namespace crosslab::train {
namespace {

using nlohmann::json;

const std::vector<std::string>& allTargets() {
  static const std::vector<std::string> t = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return t;
}

// Keys LLaMA-Factory's SFT LoRA YAML carries that fix the kind of run rather than tune it.
const std::set<std::string> kFixedKeys = {"stage", "do_train", "finetuning_type", "overwrite_output_dir",
                                          "plot_loss", "report_to"};

enum class Kind { String, Int, Real, Bool, Targets };

struct Field {
  const char* key;
  Kind kind;
  bool inYaml;  // devices is ours alone: LLaMA-Factory takes it from the launcher
};

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {
      {"model_name_or_path", Kind::String, true}, {"dataset", Kind::String, true},
      {"dataset_dir", Kind::String, true},        {"template", Kind::String, true},
      {"cutoff_len", Kind::Int, true},            {"lora_rank", Kind::Int, true},
      {"lora_alpha", Kind::Int, true},            {"lora_dropout", Kind::Real, true},
      {"lora_target", Kind::Targets, true},       {"use_rslora", Kind::Bool, true},
      {"learning_rate", Kind::Real, true},        {"num_train_epochs", Kind::Real, true},
      {"per_device_train_batch_size", Kind::Int, true},
      {"gradient_accumulation_steps", Kind::Int, true},
      {"devices", Kind::Int, false},              {"lr_scheduler_type", Kind::String, true},
      {"warmup_ratio", Kind::Real, true},         {"max_grad_norm", Kind::Real, true},
      {"seed", Kind::Int, true},                  {"bf16", Kind::Bool, true},
      {"max_steps", Kind::Int, true},             {"logging_steps", Kind::Int, true},
      {"save_steps", Kind::Int, true},            {"val_size", Kind::Real, true},
      {"eval_steps", Kind::Int, true},            {"output_dir", Kind::String, true},
      {"deepspeed", Kind::String, true},
  };
  return f;
}

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

// Recipe -> flat object with LLaMA-Factory key names.
json toObject(const Recipe& r) {
  json j;
  j["model_name_or_path"] = r.modelPath;
  j["dataset"] = r.dataset;
  j["dataset_dir"] = r.datasetDir;
  j["template"] = r.templateName;
  j["cutoff_len"] = r.cutoffLen;
  j["lora_rank"] = r.loraRank;
  j["lora_alpha"] = r.loraAlpha;
  j["lora_dropout"] = r.loraDropout;
  j["lora_target"] = joinTargets(r.loraTargets);
  j["use_rslora"] = r.useRslora;
  j["learning_rate"] = r.learningRate;
  j["num_train_epochs"] = r.numTrainEpochs;
  j["per_device_train_batch_size"] = r.perDeviceTrainBatchSize;
  j["gradient_accumulation_steps"] = r.gradientAccumulationSteps;
  j["devices"] = r.devices;
  j["lr_scheduler_type"] = r.lrSchedulerType;
  j["warmup_ratio"] = r.warmupRatio;
  j["max_grad_norm"] = r.maxGradNorm;
  j["seed"] = r.seed;
  j["bf16"] = r.dtype == "bf16";
  j["max_steps"] = r.maxSteps;
  j["logging_steps"] = r.loggingSteps;
  j["save_steps"] = r.saveSteps;
  j["val_size"] = r.valSize;
  j["eval_steps"] = r.evalSteps;
  j["output_dir"] = r.outputDir;
  j["deepspeed"] = r.deepspeed;
  return j;
}

template <typename T>
T as(const json& v, const char* key) {
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(std::string(key) + ": expected " +
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

// Applies a flat object onto `r`; keys it does not know go to unknownKeys.
void applyObject(Recipe& r, const json& j, bool alphaGiven) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    checkText(k, k, true);
    if (v.is_string()) checkText(v.get_ref<const std::string&>(), k, false);
    if (v.is_null()) continue;  // LLaMA-Factory writes None for "unset"
    if (k == "model_name_or_path") r.modelPath = as<std::string>(v, "model_name_or_path");
    else if (k == "dataset") r.dataset = as<std::string>(v, "dataset");
    else if (k == "dataset_dir") r.datasetDir = as<std::string>(v, "dataset_dir");
    else if (k == "template") r.templateName = as<std::string>(v, "template");
    else if (k == "cutoff_len") r.cutoffLen = as<int>(v, "cutoff_len");
    else if (k == "lora_rank") r.loraRank = as<int>(v, "lora_rank");
    else if (k == "lora_alpha") r.loraAlpha = as<int>(v, "lora_alpha");
    else if (k == "lora_dropout") r.loraDropout = as<double>(v, "lora_dropout");
    else if (k == "lora_target") r.loraTargets = parseTargets(as<std::string>(v, "lora_target"));
    else if (k == "use_rslora") r.useRslora = as<bool>(v, "use_rslora");
    else if (k == "learning_rate") r.learningRate = as<double>(v, "learning_rate");
    else if (k == "num_train_epochs") r.numTrainEpochs = as<double>(v, "num_train_epochs");
    else if (k == "per_device_train_batch_size") r.perDeviceTrainBatchSize = as<int>(v, "per_device_train_batch_size");
    else if (k == "gradient_accumulation_steps") r.gradientAccumulationSteps = as<int>(v, "gradient_accumulation_steps");
    else if (k == "devices") r.devices = as<int>(v, "devices");
    else if (k == "lr_scheduler_type") r.lrSchedulerType = as<std::string>(v, "lr_scheduler_type");
    else if (k == "warmup_ratio") r.warmupRatio = as<double>(v, "warmup_ratio");
    else if (k == "max_grad_norm") r.maxGradNorm = as<double>(v, "max_grad_norm");
    else if (k == "seed") r.seed = as<std::uint64_t>(v, "seed");
    else if (k == "bf16") r.dtype = as<bool>(v, "bf16") ? "bf16" : "f32";
    else if (k == "max_steps") r.maxSteps = as<std::int64_t>(v, "max_steps");
    else if (k == "logging_steps") r.loggingSteps = as<int>(v, "logging_steps");
    else if (k == "save_steps") r.saveSteps = as<int>(v, "save_steps");
    else if (k == "val_size") r.valSize = as<double>(v, "val_size");
    else if (k == "eval_steps") r.evalSteps = as<int>(v, "eval_steps");
    else if (k == "output_dir") r.outputDir = as<std::string>(v, "output_dir");
    else if (k == "deepspeed") r.deepspeed = as<std::string>(v, "deepspeed");
    else if (k == "save_strategy" && v.is_string() && v.get<std::string>() == "no") r.saveSteps = 0;
    else if (kFixedKeys.count(k)) continue;
    else r.unknownKeys[k] = v.is_string() ? v.get<std::string>() : v.dump();
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

// A YAML scalar as the JSON value of the field's kind (YAML itself is untyped text here).
json yamlScalar(const YAML::Node& node, const std::string& key) {
  const auto f = std::find_if(fields().begin(), fields().end(), [&](const Field& x) { return key == x.key; });
  if (!node.IsScalar()) {
    if (f != fields().end() && f->kind == Kind::Targets && node.IsSequence()) {
      std::string joined;
      for (const auto& item : node) joined += (joined.empty() ? "" : ",") + item.as<std::string>();
      return joined;
    }
    if (f != fields().end()) throw std::runtime_error(key + ": expected a single value");
    YAML::Emitter e;
    e << YAML::Flow << node;
    return std::string(e.c_str());
  }
  const std::string text = node.Scalar();
  if (text == "null" || text == "~" || text == "None") return nullptr;
  if (f == fields().end()) return text;
  try {
    switch (f->kind) {
      case Kind::String:
      case Kind::Targets: return text;
      case Kind::Int: return node.as<std::int64_t>();
      case Kind::Real: return node.as<double>();
      case Kind::Bool: return node.as<bool>();
    }
  } catch (const YAML::Exception&) {
    throw std::runtime_error(key + ": cannot read '" + text + "' as " +
                             (f->kind == Kind::Bool ? "true/false" : "a number"));
  }
  return text;
}

}  // namespace

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

std::vector<std::string> Recipe::validate() const {
  std::vector<std::string> p;
  if (loraRank < 1) p.push_back("lora_rank must be at least 1");
  if (loraAlpha < 1) p.push_back("lora_alpha must be at least 1");
  if (loraDropout < 0 || loraDropout >= 1) p.push_back("lora_dropout must be in [0, 1)");
  if (loraTargets.empty()) p.push_back("lora_target names no module");
  if (!(learningRate > 0)) p.push_back("learning_rate must be positive");
  if (!(numTrainEpochs > 0) && maxSteps <= 0) p.push_back("num_train_epochs must be positive (or set max_steps)");
  if (perDeviceTrainBatchSize < 1) p.push_back("per_device_train_batch_size must be at least 1");
  if (gradientAccumulationSteps < 1) p.push_back("gradient_accumulation_steps must be at least 1");
  if (devices < 1) p.push_back("devices must be at least 1");
  if (cutoffLen < 2) p.push_back("cutoff_len must be at least 2");
  if (lrSchedulerType != "linear" && lrSchedulerType != "cosine" && lrSchedulerType != "constant")
    p.push_back("lr_scheduler_type must be linear, cosine or constant");
  if (warmupRatio < 0 || warmupRatio >= 1) p.push_back("warmup_ratio must be in [0, 1)");
  if (maxGradNorm < 0) p.push_back("max_grad_norm must not be negative");
  if (dtype != "bf16" && dtype != "f32") p.push_back("dtype must be bf16 or f32");
  if (templateName != "llama3") p.push_back("template '" + templateName + "' is not supported (llama3)");
  if (loggingSteps < 1) p.push_back("logging_steps must be at least 1");
  if (saveSteps < 0 || evalSteps < 0) p.push_back("save_steps and eval_steps must not be negative");
  if (valSize < 0 || valSize >= 1) p.push_back("val_size must be in [0, 1)");
  return p;
}

std::string recipeToJson(const Recipe& r) {
  json j = toObject(r);
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
  const json j = toObject(r);
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "stage" << YAML::Value << "sft";
  out << YAML::Key << "do_train" << YAML::Value << true;
  out << YAML::Key << "finetuning_type" << YAML::Value << "lora";
  for (const auto& f : fields()) {
    if (!f.inYaml) continue;
    const json& v = j.at(f.key);
    // Unset optional keys stay out of the file rather than becoming "" or 0.
    const std::string key = f.key;
    if ((v.is_string() && v.get<std::string>().empty()) ||
        ((key == "max_steps" || key == "eval_steps" || key == "val_size") && v.is_number() && v.get<double>() <= 0))
      continue;
    if (key == "save_steps" && r.saveSteps == 0) {
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
    j[key] = yamlScalar(kv.second, key);
  }
  Recipe r = llamaFactoryDefaults();
  applyObject(r, j, j.contains("lora_alpha") && !j["lora_alpha"].is_null());
  return r;
}

void applyOverrides(Recipe& r, const std::map<std::string, std::string>& values) {
  json j = json::object();
  for (const auto& entry : values) {
    const std::string& key = entry.first;  // a plain reference: lambdas capture it in C++17 (clang)
    const std::string& text = entry.second;
    if (key == "dtype") {
      if (text != "bf16" && text != "f32") throw std::runtime_error("dtype must be bf16 or f32, got '" + text + "'");
      j["bf16"] = text == "bf16";
      continue;
    }
    const auto f = std::find_if(fields().begin(), fields().end(), [&](const Field& x) { return key == x.key; });
    if (f == fields().end()) throw std::runtime_error("unknown recipe key '" + key + "'");
    j[key] = yamlScalar(YAML::Node(text), key);
  }
  applyObject(r, j, true);
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
