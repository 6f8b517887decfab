#pragma once
// The demo lab, end to end: lab folder + store, demo data, a trained byte-level BPE
// tokenizer, a small Llama base model pretrained briefly on the corpus, the first LoRA run
// (through a trainer the caller supplies, when the build has one), and the JSON-validity
// eval of each model on the 30 frozen questions, recorded in the store. Every phase is
// timed and reported through `progress` lines. Compiled into crosslab_engine.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/demo/demo_eval.h"
#include "core/demo/demo_pretrain.h"

namespace crosslab::demo {

// What the LoRA trainer is asked to do (the `train` command's arguments).
struct LoraRequest {
  std::filesystem::path lab, modelDir, dataDir, runDir;
  std::string dataset = "demo";
  std::optional<int> maxSteps;  // quick mode caps the lab recipe's 111 steps
  uint64_t seed = 17;
  int threads = 1;  // the demo's thread count (train --threads)
};

// What the benchmark phase is asked to do: sweep the base model with the first LoRA run's
// adapter, merged and applied at run time, through the real OpenAI-compatible server and the
// benchmark client, into the lab's benchmarks (the Benchmarks panel's first rows).
struct BenchmarkRequest {
  std::filesystem::path lab, modelDir, adapterDir;
  std::string adapterName = "demo-lora";
  std::vector<int> levels = {1, 4, 16};
  int inputWords = 32, outputTokens = 64;
  // Each level measured for this long (bench --duration); 0: by request count (bench's default,
  // max(8, 2 x concurrency)), as the quick demo does so that its counts are fixed. A count of 8
  // requests of 64 tokens is ~60 ms at one stream, short enough for one hiccup of a VM to move it.
  int secondsPerLevel = 1;
  int threads = 1;  // the demo's thread count
};

struct DemoLabOptions {
  bool quick = false;  // tests: smaller tokenizer, model, pretraining and eval
  uint64_t seed = 17;
  // One by default: a model this small gains little from a thread team, whose OpenMP
  // barriers stall on a busy machine (measured here under load: decode 4800 tok/s on one
  // thread vs 6 on two; quick pretraining 1.0 s vs 20 s), and float reductions depend on the
  // thread count, so one thread gives the same weights on every machine.
  int threads = 1;
  std::function<void(const std::string& line)> progress;
  // Trains the adapter into request.runDir (PEFT layout) and returns normally, or throws.
  // Unset: the build has no trainer; the demo stops after the base model's eval.
  std::function<void(const LoraRequest&)> trainLora;
  // Runs the sweep and records it in request.lab, or throws. Unset (a build without the
  // server), or without a LoRA run: no benchmark phase.
  std::function<void(const BenchmarkRequest&)> benchmark;
};

struct PhaseTime {
  std::string name;
  double seconds = 0;
};

struct DemoLabReport {
  std::filesystem::path lab, baseModelDir;
  bool createdLab = false;
  int trainExamples = 0, evalExamples = 0;
  int32_t vocabSize = 0;
  int64_t parameters = 0;
  PretrainResult pretrain;
  std::string evalSha256;  // of data/demo_eval.jsonl
  DemoEvalResult base;
  std::optional<DemoEvalResult> lora;
  std::optional<std::filesystem::path> loraRunDir;
  std::vector<PhaseTime> phases;
};

// Sizes of each phase for the normal and the quick demo.
struct DemoPlan {
  int32_t vocabSize;
  PretrainOptions pretrain;
  int evalMaxTokens;
  std::optional<int> loraMaxSteps;
};
DemoPlan demoPlan(bool quick, uint64_t seed);

// Creates the lab at `path` (or reuses the lab already there) and runs every phase.
// Throws std::runtime_error with a one-line reason; files already written stay valid.
DemoLabReport runDemoLab(const std::filesystem::path& path, const DemoLabOptions& options);

// The plain-text pretraining corpus: each training example's contexts, question and
// JSON answer (never the eval set).
std::vector<std::string> demoPretrainTexts(const DemoCorpus& corpus);

}  // namespace crosslab::demo
