// `crosslab-cli demo PATH [--quick] [--json]`: builds the demo lab (core/demo/demo_lab.h).
// The first LoRA run goes through the registry's `train` command when this build has one,
// so the demo needs no link-time dependency on the trainer; its benchmark serves the model
// in this process (the real server on a loopback port) and sweeps it with `bench`.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <filesystem>
#include <ostream>
#include <thread>

#include "backends/serve/openai_server.h"
#include "cli/commands.h"
#include "core/demo/demo_lab.h"
#include "core/infer/batch_scheduler.h"

namespace crosslab::cli {
namespace {

using nlohmann::json;

bool hasCommand(const std::vector<Command>& registry, const std::string& path) {
  return std::any_of(registry.begin(), registry.end(), [&](const Command& c) { return c.path == path; });
}

// Runs `train` in-process; its stdout goes to our stderr so that --json stays one object.
std::function<void(const demo::LoraRequest&)> trainThroughRegistry(const std::vector<Command>& registry, Context& ctx) {
  return [&registry, &ctx](const demo::LoraRequest& q) {
    std::vector<std::string> argv = {"train", "--model", q.modelDir.string(), "--data", q.dataDir.string(),
                                     "--dataset", q.dataset, "--out", q.runDir.string(), "--lab", q.lab.string(),
                                     "--seed", std::to_string(q.seed), "--threads", std::to_string(q.threads)};
    if (q.maxSteps) argv.insert(argv.end(), {"--max-steps", std::to_string(*q.maxSteps)});
    // A demo lab built again continues its own run rather than writing over it.
    if (std::filesystem::exists(q.runDir / "events.jsonl")) argv.push_back("--resume");
    const int rc = runCli(registry, argv, ctx.err, ctx.err);
    if (rc != 0) throw std::runtime_error("the LoRA run failed (train exited " + std::to_string(rc) + ")");
  };
}

// For each of merged and runtime LoRA: the batch scheduler and the OpenAI-compatible server
// on 127.0.0.1:<ephemeral>, swept by the registry's `bench` (recorded in the lab as any
// `bench --lab` run is); its output goes to our stderr like train's.
std::function<void(const demo::BenchmarkRequest&)> benchmarkThroughServer(const std::vector<Command>& registry, Context& ctx) {
  return [&registry, &ctx](const demo::BenchmarkRequest& q) {
    std::string levels;
    for (int c : q.levels) levels += (levels.empty() ? "" : ",") + std::to_string(c);
    for (const bool merged : {true, false}) {
      infer::SchedulerOptions so;
      so.maxBatch = *std::max_element(q.levels.begin(), q.levels.end());
      so.threads = q.threads;
      serve::ServerOptions opt;
      opt.port = 0;
      opt.baseModelId = q.modelDir.filename().string();
      if (merged) {
        so.mergeAdapter = q.adapterDir;
        opt.mergedAdapter = q.adapterName;
      } else {
        so.loras = {{q.adapterName, q.adapterDir}};
      }
      auto engine = infer::BatchScheduler::open(q.modelDir, so);
      serve::OpenAiServer server(*engine, opt);
      const int port = server.bind();
      std::thread serving([&server] { server.run(); });
      const std::string label = q.adapterName + (merged ? " merged" : " runtime LoRA") + " · local crosslab-cli serve, f32, " +
                                std::to_string(q.threads) + (q.threads == 1 ? " thread" : " threads");
      std::vector<std::string> argv = {"bench", "--url", "http://127.0.0.1:" + std::to_string(port), "--model", q.adapterName,
                                       "--concurrency", levels, "--input-len", std::to_string(q.inputWords),
                                       "--output-len", std::to_string(q.outputTokens), "--ignore-eos",
                                       "--lab", q.lab.string(), "--label", label, "--seed", "17",
                                       // As many requests first, not measured, as the widest level runs at once:
                                       // a fresh server's KV rows are first written then, not in the levels (one
                                       // pair of fresh servers here, 16 streams after 1 warm-up request: TTFT p99
                                       // 132 ms, 9.9k tok/s, below 4 streams; after 16: 29 ms, 18.4k tok/s).
                                       "--warmup", std::to_string(so.maxBatch)};
      if (q.secondsPerLevel > 0) {
        argv.push_back("--duration");
        argv.push_back(std::to_string(q.secondsPerLevel));
      }
      int rc = 1;
      try {
        rc = runCli(registry, argv, ctx.err, ctx.err);
      } catch (...) {
        server.stop();
        serving.join();
        throw;
      }
      server.stop();
      serving.join();
      engine->stop();
      if (rc != 0) throw std::runtime_error("the benchmark failed (bench exited " + std::to_string(rc) + ")");
    }
  };
}

json evalJson(const demo::DemoEvalResult& e) {
  const int total = int(e.outputs.size());
  return {{"model", e.model},
          {"json_valid", std::to_string(e.valid()) + "/" + std::to_string(total)},
          {"valid", e.valid()},
          {"total", total},
          {"seconds", e.seconds}};
}

json reportJson(const demo::DemoLabReport& r) {
  json phases = json::object();
  for (const auto& p : r.phases) phases[p.name] = p.seconds;
  json lora = nullptr;
  if (r.loraRunDir) lora = {{"run_dir", r.loraRunDir->string()}, {"eval", r.lora ? evalJson(*r.lora) : json(nullptr)}};
  return {{"lab", r.lab.string()},
          {"created", r.createdLab},
          {"train_examples", r.trainExamples},
          {"eval_examples", r.evalExamples},
          {"tokenizer", {{"vocab_size", r.vocabSize}, {"file", (r.baseModelDir / "tokenizer.json").string()}}},
          {"base_model", {{"dir", r.baseModelDir.string()}, {"parameters", r.parameters}}},
          {"pretrain",
           {{"steps", r.pretrain.steps},
            {"first_loss", r.pretrain.firstLoss},
            {"last_loss", r.pretrain.lastLoss},
            {"tokens", r.pretrain.tokens},
            {"corpus_tokens", r.pretrain.corpusTokens},
            {"seconds", r.pretrain.seconds}}},
          {"eval_sha256", r.evalSha256},
          {"base_eval", evalJson(r.base)},
          {"lora_run", lora},
          {"phases_s", phases}};
}

int demoCommand(const std::vector<Command>& registry, const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  demo::DemoLabOptions o;
  o.quick = args.has("--quick");
  if (auto t = args.value("--threads")) {
    size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(*t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t->size() || n < 1 || n > 1024) throw UsageError("--threads must be an integer in [1, 1024]");
    o.threads = n;
  }
  o.progress = [&ctx](const std::string& line) { ctx.err << line << std::endl; };
  if (hasCommand(registry, "bench")) o.benchmark = benchmarkThroughServer(registry, ctx);
  if (hasCommand(registry, "train"))
    o.trainLora = trainThroughRegistry(registry, ctx);
  else
    ctx.err << "demo: this build has no `train` command (the LoRA trainer); stopping after the base model\n";
  const auto r = demo::runDemoLab(args.positional(0, "PATH"), o);
  const json j = reportJson(r);
  if (args.has("--json")) {
    ctx.out << j.dump() << "\n";
    return 0;
  }
  ctx.out << "lab           " << r.lab.string() << (r.createdLab ? " (created)" : " (reused)") << "\n"
          << "base model    " << r.baseModelDir.string() << " (" << r.parameters << " parameters, vocab "
          << r.vocabSize << ")\n"
          << "pretrain      loss " << r.pretrain.firstLoss << " -> " << r.pretrain.lastLoss << "\n"
          << "base eval     JSON valid " << j["base_eval"]["json_valid"].get<std::string>() << "\n";
  if (r.lora) ctx.out << "lora eval     JSON valid " << evalJson(*r.lora)["json_valid"].get<std::string>() << "\n";
  for (const auto& p : r.phases) ctx.out << "time " << p.name << ": " << p.seconds << " s\n";
  return 0;
}

}  // namespace

void addDemoCommand(std::vector<Command>& commands) {
  // A snapshot of the registry as it stands (demo registers last): `train` is looked up in it.
  auto registry = std::make_shared<const std::vector<Command>>(commands);
  commands.push_back({"demo", "PATH [--quick] [--json] [--threads N]",
                      "build the demo lab: data, tokenizer, pretrained base model, first LoRA run, eval",
                      {{"--quick", false, "small and fast (tests): under a minute"},
                       {"--json", false, "print a JSON report"},
                       {"--threads", true, "CPU threads (default 1: reproducible weights on any machine)"}},
                      [registry](const Args& args, Context& ctx) { return demoCommand(*registry, args, ctx); }});
}

}  // namespace crosslab::cli
