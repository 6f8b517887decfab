#include "cli/commands.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <sstream>
#include <thread>

#include "cli/recipe_flags.h"
#include "core/infer/device.h"
#include "core/model/llama.h"
#include "core/model/safetensors_writer.h"
#include "core/store/lab_store.h"
#include "core/train/run_process.h"
#include "core/tokenizer/bpe_tokenizer.h"
#include "core/train/bpe_text_encoder.h"
#include "core/train/trainer.h"

namespace crosslab::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::atomic<bool> gStop{false};
void onTrainStopSignal(int) { gStop = true; }  // internal linkage: one per command

void setThreads(const Args& args) {
  const long long t = args.integer("--threads", 0, 0);
  at::set_num_threads(t > 0 ? int(t) : int(std::max(1u, std::thread::hardware_concurrency())));
}

// Examples of --data (a file, or a folder with dataset_info.json and --dataset), encoded
// with the model's tokenizer; the eval share (val_size) is a seed-fixed sample.
std::pair<std::vector<train::EncodedExample>, std::vector<train::EncodedExample>> loadData(
    const Args& args, const train::Recipe& r, const fs::path& model) {
  // --data, else the recipe's own: one file (dataset_file) or dataset_info.json names.
  auto data = args.value("--data");
  if (!data && !r.datasetFile.empty()) data = r.datasetFile;
  if (!data && !r.dataset.empty()) data = r.datasetDir;
  if (!data) throw UsageError("--data FILE|DIR is required (or a recipe naming dataset_file or dataset)");
  std::vector<train::Example> examples;
  if (fs::is_directory(*data)) {
    if (r.dataset.empty()) throw UsageError("--dataset NAME is required with a data folder");
    examples = train::loadDatasets(*data, r.dataset);
  } else {
    examples = train::loadDataFile(*data, r.formatting);
  }
  if (!fs::exists(model / "tokenizer.json")) throw std::runtime_error(model.string() + ": no tokenizer.json");
  const auto tok = tokenizer::BpeTokenizer::load(model / "tokenizer.json");
  const train::BpeTextEncoder enc(tok);
  std::vector<train::EncodedExample> all;
  for (const auto& e : examples) all.push_back(train::encodeSupervised(e, enc, r.cutoffLen));
  std::vector<train::EncodedExample> evalSet;
  const size_t nEval = size_t(double(all.size()) * r.valSize);
  if (nEval > 0 && nEval < all.size()) {
    std::mt19937_64 rng(r.seed);
    for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[size_t(rng() % i)]);
    evalSet.assign(all.begin(), all.begin() + std::ptrdiff_t(nEval));
    all.erase(all.begin(), all.begin() + std::ptrdiff_t(nEval));
  }
  return {std::move(all), std::move(evalSet)};
}

// Mirrors events into the lab store: the run row, one metrics row per logged step (eval
// loss folded into its step's row), every event.
class StoreMirror {
 public:
  StoreMirror(const fs::path& lab, const fs::path& runDir, const std::string& modelDir, std::int64_t totalSteps,
              const std::string& recipeJson, std::int64_t runId)
      : store_(store::LabStore::open(lab)), runId_(runId) {
    const std::string dir = store::normalRunDir(runDir.string());
    auto runs = store_.runs();
    if (runId_ && !runs.byId(runId_)) throw std::runtime_error("the lab has no run " + std::to_string(runId_));
    if (!runId_)
      if (const auto row = runs.byDir(dir)) runId_ = row->id;  // a resumed run (or one the Training panel registered) keeps its row
    if (runId_ == 0) {
      store::NewRun nr;
      nr.name = runDir.filename().string();
      nr.model = modelDir;
      nr.totalSteps = totalSteps;
      nr.runDir = dir;
      nr.recipeJson = recipeJson;
      runId_ = runs.requestCreate(nr);
    } else {
      runs.requestPlan(runId_, totalSteps, recipeJson);
      runs.requestStatus(runId_, train::RunStatus::Pending, "resuming");
    }
    runs.requestStatus(runId_, train::RunStatus::Running);
  }

  void onEvent(const train::TrainEvent& e) {
    if (e.event == "step" || e.event == "eval") {
      if (!row_ || row_->step != e.step) row_ = store::MetricRow{};
      row_->step = e.step;
      if (e.loss) row_->loss = e.loss;
      if (e.lr) row_->lr = e.lr;
      if (e.evalLoss) row_->evalLoss = e.evalLoss;
      row_->epoch = e.epoch;
      row_->wallSeconds = e.elapsedSeconds;
      row_->tokensPerSecond = e.tokensPerSecond;
      row_->tokens = e.totalTokens;
      store_.runs().appendMetrics(runId_, {*row_});
    }
    if (e.event != "step") store_.addEvent(runId_, std::nullopt, "train." + e.event, e.message, train::eventJson(e));
  }

  void finish(train::RunStatus status, const std::string& reason = {}) { store_.runs().requestStatus(runId_, status, reason); }

 private:
  store::LabStore store_;
  std::int64_t runId_ = 0;
  std::optional<store::MetricRow> row_;
};

void printProgress(std::ostream& out, const train::TrainEvent& e, bool tty) {
  if (e.event == "step") {
    std::ostringstream line;
    line << "step " << e.step << "/" << e.totalSteps << "  loss " << std::fixed << std::setprecision(4) << *e.loss
         << "  lr " << std::scientific << std::setprecision(2) << *e.lr << std::defaultfloat << "  "
         << train::timedeltaText(e.elapsedSeconds) << "<" << train::timedeltaText(e.remainingSeconds) << "  "
         << std::fixed << std::setprecision(1) << e.tokensPerSecond << " tok/s";
    if (tty) {
      const int width = 30, done = e.totalSteps ? int(width * e.step / e.totalSteps) : 0;
      out << "\r[" << std::string(size_t(done), '#') << std::string(size_t(width - done), '.') << "] " << line.str()
          << "\x1b[K" << std::flush;
      if (e.step == e.totalSteps) out << "\n";
    } else {
      out << line.str() << "\n" << std::flush;
    }
  } else if (e.event == "eval") {
    out << (tty ? "\n" : "") << "eval loss " << *e.evalLoss << " at step " << e.step << "\n" << std::flush;
  }
}

int trainCommand(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  if (args.has("--run-id") && !args.has("--lab")) throw UsageError("--run-id needs --lab");
  std::vector<std::string> warnings;
  if (auto file = args.value("--recipe")) train::loadRecipeFile(*file);  // a bad file: exit 1 naming it
  train::Recipe recipe;
  try {
    recipe = recipeFromArgs(args, &warnings);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {  // a malformed flag value
    throw UsageError(e.what());
  }
  for (const auto& w : warnings) ctx.err << "warning: " << w << "\n";
  const auto problems = recipe.validate();
  if (!problems.empty()) throw UsageError("invalid recipe: " + problems.front());
  if (recipe.modelPath.empty()) throw UsageError("--model DIR is required");
  const fs::path modelDir = recipe.modelPath;
  if (!fs::is_directory(modelDir)) throw std::runtime_error(modelDir.string() + ": not a directory");
  const auto out = args.value("--out");
  if (!out && recipe.outputDir.empty()) throw UsageError("--out RUN_DIR is required (or a recipe naming output_dir)");
  const fs::path runDir = out ? *out : recipe.outputDir;
  // A run folder holds one run: never written over, except to continue it (--resume).
  if (!args.has("--resume")) {
    std::error_code ec;
    bool used = fs::exists(runDir / "events.jsonl", ec) || fs::exists(runDir / "adapter_model.safetensors", ec);
    if (fs::is_directory(runDir, ec))
      for (const auto& e : fs::directory_iterator(runDir, ec))
        if (e.path().filename().string().rfind("checkpoint-", 0) == 0) used = true;
    if (used)
      throw std::runtime_error(runDir.string() + " already holds a run; continue it with --resume, or train into a new folder");
  }
  recipe.outputDir = runDir.string();
  setThreads(args);

  auto [trainSet, evalSet] = loadData(args, recipe, modelDir);
  const auto dtype = recipe.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  auto model = model::LlamaModel::load(modelDir, dtype, infer::parseDevice(args.value("--device").value_or("cpu")));
  fs::create_directories(runDir);
  model::writeFileAtomically(runDir / "recipe.json", train::recipeToJson(recipe));
  // RUN_DIR/process.json while this process trains: a watcher tells a killed run from a live one.
  const train::ProcessRecordGuard processRecord(runDir);

  train::TrainerOptions opts;
  opts.runDir = runDir;
  opts.baseModel = modelDir.string();
  opts.resume = args.has("--resume");
  opts.stop = &gStop;
  std::optional<StoreMirror> mirror;
  const bool tty = isatty(STDOUT_FILENO) && &ctx.out == &std::cout;
  opts.onEvent = [&](const train::TrainEvent& e) {
    if (mirror) mirror->onEvent(e);
    printProgress(ctx.out, e, tty);
  };
  train::Trainer trainer(model, recipe, std::move(trainSet), std::move(evalSet), opts);
  if (auto lab = args.value("--lab")) {
    const std::int64_t runId = args.has("--run-id") ? args.integer("--run-id", 0, 1) : 0;
    mirror.emplace(*lab, runDir, modelDir.string(), trainer.totalSteps(), train::recipeToJson(recipe), runId);
  }
  std::signal(SIGTERM, onTrainStopSignal);
  std::signal(SIGINT, onTrainStopSignal);
  train::TrainResult result;
  try {
    result = trainer.run();
  } catch (const std::exception& e) {
    if (mirror) mirror->finish(train::RunStatus::Failed, e.what());
    throw;
  }
  if (result.stopped) {
    if (mirror) mirror->finish(train::RunStatus::Stopped, "stopped by signal at step " + std::to_string(result.steps));
    ctx.out << "stopped at step " << result.steps << "/" << result.totalSteps << " (checkpoint-" << result.steps
            << "); continue with --resume\n";
    return 0;
  }
  if (mirror) mirror->finish(train::RunStatus::Finished, "finished");
  ctx.out << "trained " << result.steps << " steps" << (result.resumedFrom ? " (resumed from step " + std::to_string(result.resumedFrom) + ")" : "")
          << "; adapter in " << runDir.string() << "\n";
  return 0;
}

// HF tensor list of a loaded model, in checkpoint order.
std::vector<std::pair<std::string, at::Tensor>> hfTensors(model::LlamaModel& m) {
  auto& w = m.weights();
  std::vector<std::pair<std::string, at::Tensor>> t = {{"model.embed_tokens.weight", w.embed}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const auto& L = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const std::pair<const char*, const at::Tensor*> parts[] = {
        {"input_layernorm.weight", &L.inputNorm}, {"self_attn.q_proj.weight", &L.wq}, {"self_attn.k_proj.weight", &L.wk},
        {"self_attn.v_proj.weight", &L.wv},       {"self_attn.o_proj.weight", &L.wo}, {"self_attn.q_proj.bias", &L.bq},
        {"self_attn.k_proj.bias", &L.bk},         {"self_attn.v_proj.bias", &L.bv},   {"self_attn.o_proj.bias", &L.bo},
        {"post_attention_layernorm.weight", &L.postNorm}, {"mlp.gate_proj.weight", &L.wGate},
        {"mlp.up_proj.weight", &L.wUp},           {"mlp.down_proj.weight", &L.wDown}, {"mlp.gate_proj.bias", &L.bGate},
        {"mlp.up_proj.bias", &L.bUp},             {"mlp.down_proj.bias", &L.bDown}};
    for (const auto& [name, tensor] : parts)
      if (tensor->defined()) t.emplace_back(p + name, *tensor);
  }
  t.emplace_back("model.norm.weight", w.finalNorm);
  if (!m.config().tieWordEmbeddings) t.emplace_back("lm_head.weight", w.lmHead);
  return t;
}

int mergeCommand(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const fs::path modelDir = args.directory("--model"), adapterDir = args.directory("--adapter");
  const auto outArg = args.value("--out");
  if (!outArg) throw UsageError("--out DIR is required");
  const std::string dtypeName = args.value("--dtype").value_or("f32");
  if (dtypeName != "f32" && dtypeName != "bf16") throw UsageError("--dtype must be f32 or bf16");
  const fs::path out = *outArg;
  if (fs::exists(out) && !fs::is_empty(out)) throw std::runtime_error(out.string() + ": exists and is not empty");
  setThreads(args);
  auto m = model::LlamaModel::load(modelDir, at::kFloat, at::kCPU);
  m.mergeLoraAdapter(adapterDir);  // W += scaling·B·A in fp32

  const fs::path tmp = out.string() + ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  const bool bf16 = dtypeName == "bf16";
  std::vector<at::Tensor> keep;
  std::vector<model::TensorToWrite> tensors;
  for (const auto& [name, t] : hfTensors(m)) {
    keep.push_back(t.to(bf16 ? at::kBFloat16 : at::kFloat).contiguous());
    const auto& c = keep.back();
    tensors.push_back({name, bf16 ? model::DType::BF16 : model::DType::F32, c.sizes().vec(), c.data_ptr(),
                       size_t(c.numel()) * c.element_size()});
  }
  model::writeSafetensors(tmp / "model.safetensors", tensors, {{"format", "pt"}});
  json config = json::parse(std::ifstream(modelDir / "config.json"));
  config["torch_dtype"] = bf16 ? "bfloat16" : "float32";
  model::writeFileAtomically(tmp / "config.json", config.dump(2) + "\n");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"})
    if (fs::exists(modelDir / f)) fs::copy_file(modelDir / f, tmp / f);
  if (fs::exists(out)) fs::remove(out);  // the empty folder
  fs::rename(tmp, out);
  ctx.out << "merged " << adapterDir.string() << " into " << out.string() << " (" << dtypeName << ")\n";
  return 0;
}

}  // namespace

void addTrainCommands(std::vector<Command>& commands) {
  auto trainOptions = recipeOptions();
  for (const OptionSpec& o : std::vector<OptionSpec>{
           {"--data", true, "dataset file (alpaca/sharegpt JSON or JSONL) or folder with dataset_info.json"},
           {"--out", true, "run folder (adapter, events.jsonl, recipe.json, checkpoint-N/)"},
           {"--lab", true, "lab folder: mirror the run, its metrics and events into lab.sqlite"},
           {"--resume", false, "continue from the newest complete checkpoint in the run folder"},
           {"--run-id", true, "the lab's row of this run (the window registers it first)"},
           {"--device", true, "cpu (default), cuda, cuda:N"},
           {"--threads", true, "CPU threads (default: all cores)"}})
    trainOptions.push_back(o);
  commands.push_back({"train",
                      "--model DIR --data FILE|DIR [--dataset NAME] [--recipe FILE] [recipe flags] --out RUN_DIR "
                      "[--lab LAB] [--resume] [--max-steps N]",
                      "train a LoRA adapter on the local engine (SIGTERM: checkpoint and stop)", trainOptions,
                      trainCommand});
  commands.push_back({"merge", "--model DIR --adapter DIR --out DIR [--dtype bf16|f32]",
                      "merge a PEFT LoRA adapter into its base model; write a Hugging Face checkpoint",
                      {{"--model", true, "base model folder", true},
                       {"--adapter", true, "PEFT adapter folder", true},
                       {"--out", true, "output folder (new or empty)", true},
                       {"--dtype", true, "f32 (default) or bf16"},
                       {"--threads", true, "CPU threads"}},
                      mergeCommand});
}

}  // namespace crosslab::cli
