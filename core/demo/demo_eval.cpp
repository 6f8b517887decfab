#include "core/demo/demo_eval.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>

#include "core/infer/local_engine.h"
#include "core/store/lab_store.h"
#include "core/tokenizer/chat_template.h"

namespace crosslab::demo {

int DemoEvalResult::valid() const {
  int n = 0;
  for (const auto& o : outputs) n += o.validJson ? 1 : 0;
  return n;
}

bool isValidAnswerJson(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);  // rejects trailing garbage
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  if (!j.is_object() || !j.contains("answer") || !j["answer"].is_string()) return false;
  if (!j.contains("evidence") || !j["evidence"].is_array()) return false;
  for (const auto& e : j["evidence"])
    if (!e.is_string()) return false;
  return true;
}

DemoEvalResult evaluateDemoModel(const std::filesystem::path& modelDir, const std::string& label,
                                 const std::vector<QaExample>& eval, const DemoEvalOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  infer::EngineOptions eo;
  eo.threads = o.threads;
  eo.adapter = o.adapterDir;
  auto engine = infer::LocalEngine::open(modelDir, eo);
  const auto* tok = engine->tokenizer();
  if (!tok) throw std::runtime_error(modelDir.string() + ": no tokenizer.json");
  infer::GenerateOptions g;
  g.maxTokens = o.maxTokens;  // greedy: SamplingParams default temperature 0
  for (const auto& w : tokenizer::llama3StopWords())
    if (auto id = tok->tokenId(w)) g.stopIds.push_back(*id);
  DemoEvalResult r;
  r.model = label;
  for (const auto& ex : eval) {
    const std::string prompt =
        tokenizer::renderLlama3Chat({{"system", demoSystemPrompt()}, {"user", demoUserPrompt(ex)}});
    const auto out = engine->generate(tok->encode(prompt, {false, true}), g);
    r.outputs.push_back({ex.id, out.text, isValidAnswerJson(out.text)});
    if (o.onProgress) o.onProgress(int(r.outputs.size()), int(eval.size()));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void recordSamples(store::LabStore& lab, const std::string& evalSha256, const DemoEvalResult& result) {
  store::Transaction tx(lab.db());
  auto st = lab.db().prepare(
      "INSERT INTO samples (eval_sha256, question_id, model, output, source, prompt_template, created_at) "
      "VALUES (?, ?, ?, ?, 'demo', 'llama3', ?) "
      "ON CONFLICT (eval_sha256, question_id, model) DO UPDATE SET output = excluded.output, "
      "created_at = excluded.created_at");
  const std::string now = store::utcNow();
  for (const auto& o : result.outputs) {
    st.bind(1, evalSha256).bind(2, o.questionId).bind(3, result.model).bind(4, o.output).bind(5, now);
    st.run();
    st.reset();
  }
  tx.commit();
}

}  // namespace crosslab::demo
