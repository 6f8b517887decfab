#include "core/demo/demo_lab.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "core/demo/demo_model.h"
#include "core/demo/demo_progress.h"
#include "core/model/model_config.h"
#include "core/store/lab_store.h"
#include "core/tokenizer/bpe_trainer.h"
#include "core/train/recipe.h"
#include "core/util/sha256.h"

namespace crosslab::demo {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Runs one phase, records its time and says so on the progress stream.
template <typename F>
void phase(DemoLabReport& report, const DemoLabOptions& o, const std::string& name, F&& body) {
  if (o.progress) o.progress(demoPhaseBeginLine(name));
  const auto t0 = Clock::now();
  body();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  report.phases.push_back({name, s});
  if (o.progress) o.progress(demoPhaseEndLine(name, s));
}

store::LabStore openOrCreateLab(const fs::path& path, bool& created) {
  created = !store::LabStore::isLab(path);
  return created ? store::LabStore::create(path, "demo") : store::LabStore::open(path);
}

std::vector<std::string> tokenizerTexts(const DemoCorpus& corpus) {
  std::vector<std::string> texts = demoPretrainTexts(corpus);
  texts.push_back(demoSystemPrompt());
  for (const auto& ex : corpus.train) texts.push_back(demoUserPrompt(ex));
  return texts;
}

DemoEvalResult evaluate(const fs::path& modelDir, const std::string& label, const std::string& adapter,
                        const DemoCorpus& corpus, const DemoPlan& plan, const DemoLabOptions& o) {
  DemoEvalOptions eo;
  eo.adapterDir = adapter;
  eo.maxTokens = plan.evalMaxTokens;
  eo.threads = o.threads;
  eo.onProgress = [&](int done, int total) {
    if (o.progress) o.progress(demoEvalLine(label, done, total));
  };
  return evaluateDemoModel(modelDir, label, corpus.eval, eo);
}

}  // namespace

DemoPlan demoPlan(bool quick, uint64_t seed) {
  DemoPlan p;
  p.pretrain.seed = seed;
  if (quick) {
    p.vocabSize = 768;
    p.pretrain.steps = 20;
    p.pretrain.batch = 4;
    p.pretrain.seqLen = 64;
    p.evalMaxTokens = 16;
    p.loraMaxSteps = 4;
  } else {
    p.vocabSize = 2048;
    p.pretrain.steps = 300;
    p.pretrain.batch = 8;
    p.pretrain.seqLen = 128;
    p.evalMaxTokens = 96;
  }
  return p;
}

std::vector<std::string> demoPretrainTexts(const DemoCorpus& corpus) {
  std::vector<std::string> texts;
  for (const auto& ex : corpus.train) {
    std::string t;
    for (const auto& c : ex.contexts) t += c + "\n";
    t += ex.question + "\n" + ex.answerJson();
    texts.push_back(std::move(t));
  }
  return texts;
}

DemoLabReport runDemoLab(const fs::path& path, const DemoLabOptions& o) {
  DemoLabReport r;
  r.lab = path;
  const DemoPlan plan = demoPlan(o.quick, o.seed);
  const DemoCorpus corpus = makeDemoCorpus(o.seed);
  r.trainExamples = int(corpus.train.size());
  r.evalExamples = int(corpus.eval.size());
  const fs::path dataDir = path / "data";
  r.baseModelDir = path / "models" / "demo-base";
  std::optional<store::LabStore> lab;
  tokenizer::TrainedBpe tok;

  phase(r, o, "lab", [&] { lab.emplace(openOrCreateLab(path, r.createdLab)); });
  phase(r, o, "data", [&] {
    writeDemoData(corpus, dataDir.string());
    r.evalSha256 = util::sha256File(dataDir / "demo_eval.jsonl");
  });
  phase(r, o, "tokenizer", [&] {
    tokenizer::BpeTrainerOptions to;
    to.vocabSize = plan.vocabSize;
    tok = tokenizer::trainByteLevelBpe(tokenizerTexts(corpus), to);
    r.vocabSize = tok.vocabSize();
  });
  phase(r, o, "base model", [&] {
    DemoModelSpec spec = demoModelSpec(o.quick);
    spec.seed = uint32_t(o.seed);
    writeDemoBaseModel(r.baseModelDir, tok, spec);
    r.parameters = model::loadModelConfig(r.baseModelDir).parameterCount();
  });
  phase(r, o, "pretrain", [&] {
    PretrainOptions po = plan.pretrain;
    po.threads = o.threads;  // the thread count is part of what makes the weights reproducible
    const int every = std::max(1, po.steps / 100);  // a determinate bar in the GUI, not a flood on a terminal
    po.onProgress = [&](const PretrainProgress& p) {
      if (o.progress && (p.step % every == 0 || p.step == p.totalSteps))
        o.progress(demoPretrainLine(p.step, p.totalSteps, p.loss, p.lr));
    };
    r.pretrain = pretrainDemoModel(r.baseModelDir, demoPretrainTexts(corpus), po);
  });
  if (o.trainLora) {
    LoraRequest req{path, r.baseModelDir, dataDir, path / "runs" / "demo-lora", "demo", plan.loraMaxSteps, o.seed, o.threads};
    phase(r, o, "lora", [&] {
      // The lab recipe on the demo's training set, as `train` will count it.
      train::Recipe recipe = train::Recipe::labDefaults();
      if (plan.loraMaxSteps) recipe.maxSteps = *plan.loraMaxSteps;
      if (o.progress) o.progress(demoLoraSizeLine(int(recipe.totalSteps(r.trainExamples))));
      o.trainLora(req);
    });
    r.loraRunDir = req.runDir;
  }
  phase(r, o, "eval base", [&] {
    r.base = evaluate(r.baseModelDir, "demo-base", "", corpus, plan, o);
    recordSamples(*lab, r.evalSha256, r.base);
    // The Review panel opens the eval set named by this lab setting.
    auto st = lab->db().prepare("INSERT OR REPLACE INTO settings(key, value) VALUES ('review.eval_path', ?)");
    st.bind(1, std::filesystem::absolute(dataDir / "demo_eval.jsonl").string()).run();
  });
  if (r.loraRunDir) {
    phase(r, o, "eval lora", [&] {
      r.lora = evaluate(r.baseModelDir, "demo-lora", r.loraRunDir->string(), corpus, plan, o);
      recordSamples(*lab, r.evalSha256, *r.lora);
    });
  }
  if (r.loraRunDir && o.benchmark) {
    BenchmarkRequest req{path, r.baseModelDir, *r.loraRunDir};
    req.threads = o.threads;
    if (o.quick) {
      req.inputWords = 16;
      req.outputTokens = 16;
      req.secondsPerLevel = 0;
    }
    phase(r, o, "benchmark", [&] { o.benchmark(req); });
  }
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& p : r.phases) phases[p.name] = p.seconds;
  lab->addEvent(std::nullopt, std::nullopt, "demo", "demo lab built",
                nlohmann::json{{"phases_s", phases}, {"base_json_valid", r.base.valid()}}.dump());
  return r;
}

}  // namespace crosslab::demo
