// crosslab-cli eval generate | judge: the eval commands that talk to OpenAI-compatible
// endpoints (our server, vLLM, hosted APIs, judges).
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iomanip>
#include <map>
#include <ostream>

#include "cli/commands.h"
#include "backends/openai_chat_client.h"
#include "backends/secrets/keyring.h"
#include "core/infer/local_engine.h"
#include "core/tokenizer/chat_template.h"

#include <functional>
#include <memory>
#include "core/eval/eval_store.h"
#include "core/eval/judge_gate.h"
#include "core/eval/verdict.h"
#include "cli/progress.h"
#include "core/ledger/lab_ledger.h"

namespace crosslab::backends {
namespace {

using nlohmann::json;
using cli::Args;
using cli::Context;
using cli::UsageError;

constexpr const char* kDefaultTemplate =
    "Answer the question using only the contexts below. Reply with one JSON object and nothing else: "
    "{\"answer\": \"<your answer>\", \"evidence\": [\"<exact quote copied from a context>\", ...]}.\n\n"
    "Contexts:\n{{contexts}}\n\nQuestion: {{question}}";

std::string envKey(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? v : "";
}

int evalGenerate(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  if (args.has("--model") == args.has("--url")) throw UsageError("give exactly one of --url URL or --model DIR");
  if (args.has("--adapter") && !args.has("--model"))
    throw UsageError("with --url, select an adapter by its served name (--served-model NAME)");
  const auto evalSet = eval::loadEvalSet(args.required("--eval"));
  const std::string label = args.required("--name");
  const std::string outPath = args.required("--out");
  const std::string tmpl = args.value("--template") ? eval::readFile(*args.value("--template")) : kDefaultTemplate;
  const int maxTokens = int(args.integer("--max-tokens", 1024, 1, 1 << 20));
  // One prompt in, the model's raw text out: an OpenAI-compatible endpoint or the local engine.
  std::function<std::string(const std::string&, const std::string&)> complete;
  std::string source;
  eval::ChatRequest req;
  OpenAiChatClient client;
  std::unique_ptr<infer::LocalEngine> engine;
  if (args.has("--url")) {
    req.url = args.required("--url");
    req.model = args.value("--served-model").value_or(label);
    req.maxTokens = maxTokens;
    if (auto env = args.value("--api-key-env")) {
      req.apiKey = envKey(*env);
      if (req.apiKey.empty()) throw std::runtime_error("environment variable " + *env + " is not set");
    }
    source = "generate " + req.url;
    complete = [&](const std::string& prompt, const std::string& id) {
      req.prompt = prompt;
      const auto r = client.complete(req);
      if (!r.ok) throw std::runtime_error("question " + id + ": " + r.error + " (nothing written)");
      return r.content;
    };
  } else {
    infer::EngineOptions eo;
    eo.adapter = args.value("--adapter").value_or("");
    engine = infer::LocalEngine::open(args.required("--model"), eo);
    const auto* tok = engine->tokenizer();
    if (!tok) throw std::runtime_error(*args.value("--model") + ": no tokenizer.json for local generation");
    source = "generate local " + *args.value("--model") + (eo.adapter.empty() ? "" : " + " + eo.adapter);
    complete = [&, tok](const std::string& prompt, const std::string&) {
      // The llama3 chat template, greedy, up to <|eot_id|> (as the lab's serving stack would).
      const std::string text = tokenizer::renderLlama3Chat({{"user", prompt}}, true);
      infer::GenerateOptions g;
      g.maxTokens = maxTokens;
      if (auto eot = tok->tokenId("<|eot_id|>")) g.stopIds.push_back(*eot);
      return engine->generate(tok->encode(text, {false, true}), g).text;
    };
  }
  std::vector<eval::OutputRecord> outputs;
  std::string jsonl;
  cli::Progress progress(ctx.err, "generated", evalSet.questions.size());
  for (const auto& q : evalSet.questions) {
    const std::string output = complete(eval::renderTemplate(tmpl, eval::rubricVars(q)), q.id);
    outputs.push_back({q.id, label, output});
    // A model can stop mid-character or write bytes that are not UTF-8: JSON Lines must stay
    // valid, so such bytes become U+FFFD in the file (the lab keeps the raw text).
    jsonl += json{{"id", q.id}, {"model", label}, {"output", output}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    progress.step(outputs.size());
  }
  progress.finish();
  eval::writeFileAtomic(outPath, jsonl);
  if (auto labDir = args.value("--lab")) {
    auto lab = store::LabStore::open(*labDir);
    eval::EvalStore es(lab);
    es.importOutputs(evalSet.sha256, outputs, source, tmpl);
  }
  ctx.out << "wrote " << outputs.size() << " outputs of " << label << " to " << outPath << " (eval " << evalSet.sha256 << ")\n";
  return 0;
}

json judgeDetail(const eval::JudgeVerdict& v) {
  return {{"judge", v.judge},       {"verdict", v.verdict},       {"checks", v.checks},
          {"reason", v.reason},     {"replies", v.replies},       {"errors", v.errors},
          {"latency_ms", v.latencyMs}, {"prompt_tokens", v.promptTokens}, {"completion_tokens", v.completionTokens},
          {"requests", v.requests}};
}

json gateDetail(const eval::GateResult& g) {
  json judges = json::array();
  for (const auto& v : g.judges) judges.push_back(judgeDetail(v));
  return {{"verdict", g.verdict}, {"judges", judges}};
}

// Whether each judge was reached: an instrument that did not measure must say so.
struct JudgeReach {
  size_t asked = 0, unanswered = 0;
  std::string lastError;
};

struct Tally {
  std::map<std::string, std::map<std::string, size_t>> byModel;  // model -> verdict -> count
  std::map<std::string, JudgeReach> judges;                        // judge name -> reach
  long promptTokens = 0, completionTokens = 0;                     // every judge, every attempt

  void count(const std::string& model, const eval::GateResult& g) {
    ++byModel[model][g.verdict];
    for (const auto& v : g.judges) {
      JudgeReach& r = judges[v.judge];
      ++r.asked;
      if (!v.answered()) ++r.unanswered;
      if (!v.errors.empty()) r.lastError = v.errors.back();
      promptTokens += v.promptTokens;
      completionTokens += v.completionTokens;
    }
  }
  bool anyAnswer() const {
    for (const auto& [name, r] : judges)
      if (r.unanswered < r.asked) return true;
    return false;
  }
};

void printTally(const Tally& t, const std::string& gate, std::ostream& os) {
  const std::string notMeasured = eval::verdictName(eval::Verdict::NotMeasured);
  for (const auto& [model, counts] : t.byModel) {
    size_t measured = 0, unmeasured = 0;
    for (const auto& [v, n] : counts) (v == notMeasured ? unmeasured : measured) += n;
    os << std::left << std::setw(28) << model;
    if (measured == 0) {
      os << "not measured under gate " << gate << " (" << unmeasured << " outputs, no judge answered)\n";
      continue;
    }
    const size_t accepted = counts.count("accept") ? counts.at("accept") : 0;
    os << "accepted " << accepted << "/" << measured << " (" << 100 * accepted / measured << "%) under gate " << gate;
    for (const auto& [v, n] : counts)
      if (v != "accept") os << ", " << (v == notMeasured ? "not measured" : v) << " " << n;
    os << "\n";
  }
}

// One line per judge that was not reached every time, with the last reason.
void reportReach(const Tally& t, std::ostream& err) {
  for (const auto& [name, r] : t.judges)
    if (r.unanswered)
      err << "judge " << name << ": no answer for " << r.unanswered << " of " << r.asked << " requests"
          << (r.lastError.empty() ? "" : " (" + r.lastError + ")") << "\n";
}

void judgeSingle(eval::JudgeGate& gate, const eval::EvalSet& set, const std::vector<eval::OutputRecord>& outputs,
                 eval::EvalStore* es, const std::vector<std::int64_t>& ids, Tally& tally, Context& ctx) {
  const std::string gateName = gate.spec().name;
  cli::Progress progress(ctx.err, "judged", outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto* q = set.find(outputs[i].id);
    if (!q) throw std::runtime_error("output id \"" + outputs[i].id + "\" is not in the eval set");
    const auto g = gate.judge(*q, outputs[i].output);
    tally.count(outputs[i].model, g);
    if (es) {
      es->setVerdict(ids[i], "gate:" + gateName, g.verdict, std::nullopt, gateDetail(g).dump());
      for (const auto& v : g.judges)
        es->setVerdict(ids[i], "judge:" + gateName + "/" + v.judge, v.verdict, std::nullopt, judgeDetail(v).dump());
    }
    progress.step(i + 1);
  }
}

void judgePairs(eval::JudgeGate& gate, const eval::EvalSet& set, const std::vector<eval::OutputRecord>& outputs,
                eval::EvalStore* es, const std::vector<std::int64_t>& ids, Tally& tally, Context& ctx) {
  const auto models = eval::modelsOf(outputs);
  if (models.size() != 2) throw UsageError("pairwise gates need outputs of exactly two models");
  std::map<std::string, size_t> yIndex;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].model == models[1]) yIndex[outputs[i].id] = i;
  const std::string label = models[0] + " vs " + models[1];
  cli::Progress progress(ctx.err, "judged pair", yIndex.size());
  size_t pairs = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].model != models[0] || !yIndex.count(outputs[i].id)) continue;
    const size_t j = yIndex[outputs[i].id];
    const auto* q = set.find(outputs[i].id);
    if (!q) throw std::runtime_error("output id \"" + outputs[i].id + "\" is not in the eval set");
    const auto g = gate.judgePair(*q, outputs[i].output, outputs[j].output);
    const auto verdict = eval::parseVerdict(g.verdict);
    eval::GateResult named = g;  // the tally names the winning model
    named.verdict = verdict == eval::Verdict::X ? models[0] : verdict == eval::Verdict::Y ? models[1] : g.verdict;
    tally.count(label, named);
    if (es) {
      json detail = gateDetail(g);
      detail["other"] = ids[j];
      es->setVerdict(ids[i], "pair:gate:" + gate.spec().name, g.verdict, std::nullopt, detail.dump());
    }
    progress.step(++pairs, outputs[i].id);
  }
}

int evalJudge(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const auto set = eval::loadEvalSet(args.required("--eval"));
  const std::string outputsPath = args.required("--outputs");
  const auto outputs = eval::loadOutputs(outputsPath);
  // The judges' price per million tokens: their bill goes into the lab's ledger.
  std::optional<double> pricePerMIn, pricePerMOut;
  if (args.has("--usd-per-m-input")) pricePerMIn = args.number("--usd-per-m-input", 0, 0, 1e6);
  if (args.has("--usd-per-m-output")) pricePerMOut = args.number("--usd-per-m-output", 0, 0, 1e6);
  if ((pricePerMIn || pricePerMOut) && !args.has("--lab"))
    throw UsageError("--usd-per-m-input/--usd-per-m-output book the judges' cost in --lab");
  auto spec = eval::loadGateSpec(args.required("--gate"));
  OpenAiChatClient client;
  // A judge's key: its environment variable, else the OS keyring entry of that name
  // (`crosslab-cli secrets set NAME`). Never the lab, never the gate file.
  const eval::JudgeGate::KeyLookup keyFor = [](const std::string& name) {
    std::string key = envKey(name);
    if (key.empty() && secrets::keyringCompiledIn()) {
      const auto r = secrets::readSecret(QString::fromStdString(name), 3000);
      if (r.ok) key = r.value.toStdString();
    }
    return key;
  };
  eval::JudgeGate gate(spec, client, keyFor);
  std::optional<store::LabStore> lab;
  std::optional<eval::EvalStore> es;
  std::vector<std::int64_t> ids;
  if (auto labDir = args.value("--lab")) {
    lab.emplace(store::LabStore::open(*labDir));
    es.emplace(*lab);
    ids = es->importOutputs(set.sha256, outputs, outputsPath);
    if (auto published = args.value("--published"))
      for (const auto& m : eval::modelsOf(outputs)) es->setPublishedScore(m, std::stod(*published));
  } else if (args.has("--published")) {
    throw UsageError("--published needs --lab");
  }
  Tally tally;
  if (spec.pairwise) judgePairs(gate, set, outputs, es ? &*es : nullptr, ids, tally, ctx);
  else judgeSingle(gate, set, outputs, es ? &*es : nullptr, ids, tally, ctx);
  reportReach(tally, ctx.err);
  // The judges' bill, from their token counts at the configured price: other spend in the ledger.
  std::optional<double> usd;
  if (pricePerMIn || pricePerMOut) {
    usd = (tally.promptTokens * pricePerMIn.value_or(0) + tally.completionTokens * pricePerMOut.value_or(0)) / 1e6;
    if (tally.promptTokens + tally.completionTokens > 0)
      ledger::requestAddOtherSpend(*lab, "api", *usd,
                                   "judge gate " + spec.name + ": " + std::to_string(tally.promptTokens) +
                                       " prompt + " + std::to_string(tally.completionTokens) + " completion tokens");
  }
  if (args.has("--json")) {
    json judges = json::object();
    for (const auto& [name, r] : tally.judges) judges[name] = {{"asked", r.asked}, {"unanswered", r.unanswered}};
    json out{{"eval_sha256", set.sha256}, {"gate", spec.name}, {"verdicts", tally.byModel}, {"judges", judges},
             {"measured", tally.anyAnswer()}, {"prompt_tokens", tally.promptTokens},
             {"completion_tokens", tally.completionTokens}};
    if (usd) out["usd"] = *usd;
    ctx.out << out.dump() << "\n";
  } else {
    printTally(tally, spec.name, ctx.out);
    if (usd) ctx.out << "judges' tokens: " << tally.promptTokens << " prompt + " << tally.completionTokens
                     << " completion, booked $" << std::fixed << std::setprecision(4) << *usd << " as API spend\n";
  }
  // Verdicts are recorded (as not measured); the exit status says nothing was measured.
  if (!tally.anyAnswer() && !tally.judges.empty())
    throw std::runtime_error("no judge answered: nothing was measured (the lab records these verdicts as not measured)");
  return 0;
}

}  // namespace

void addEvalBackendCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"eval generate",
                      "--eval FILE --url URL|--model DIR [--adapter DIR] --name MODEL_LABEL [--lab LAB] --out FILE",
                      "generate outputs for an eval set through an OpenAI-compatible endpoint",
                      {{"--eval", true, "eval set (JSON Lines)", true},
                       {"--url", true, "OpenAI-compatible base URL (http://host:port or .../v1)"},
                       {"--model", true, "local model folder (the libtorch engine, greedy, llama3 chat template)"},
                       {"--adapter", true, "LoRA adapter folder (local engine)"},
                       {"--name", true, "model label written with every output", true},
                       {"--served-model", true, "the endpoint's model name (default: --name)"},
                       {"--template", true, "prompt template file ({{question}}, {{contexts}})"},
                       {"--api-key-env", true, "environment variable holding the API key"},
                       {"--max-tokens", true, "max tokens per output (default 1024)"},
                       {"--lab", true, "also store the outputs (with the prompt template) in this lab"},
                       {"--out", true, "outputs file to write (JSON Lines)", true}},
                      evalGenerate});
  commands.push_back({"eval judge", "--eval FILE --outputs FILE --gate GATE.json [--lab LAB] [--json]",
                      "run a judge gate (accept only on agreement; pairwise A/B swap)",
                      {{"--eval", true, "eval set (JSON Lines)", true},
                       {"--outputs", true, "outputs (JSON Lines)", true},
                       {"--gate", true, "gate file: judges, rubric, checks, mode", true},
                       {"--lab", true, "store samples, verdicts, raw replies, latency and tokens here"},
                       {"--usd-per-m-input", true, "judges' price per million prompt tokens: book their cost in the ledger"},
                       {"--usd-per-m-output", true, "judges' price per million completion tokens"},
                       {"--published", true, "published score (0..1) of these archived outputs, for calibration"},
                       {"--json", false, "print a JSON object"}},
                      evalJudge});
}

}  // namespace crosslab::backends
