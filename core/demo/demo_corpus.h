#pragma once
// The demo lab's data: a deterministic synthetic grounded-QA corpus in the "Beyond CUDA"
// lab's spirit — fictional venues, boxes, prices, incidents and runs described in short
// context passages. Each example is a question + retrieval contexts -> a JSON answer
// {"answer": "...", "evidence": ["exact quote", ...]} whose quotes are exact substrings of
// the contexts. The same seed gives the same bytes on every machine.

#include <cstdint>
#include <string>
#include <vector>

namespace crosslab::demo {

struct QaExample {
  std::string id;
  std::string question;
  std::vector<std::string> contexts;
  std::string answer;                  // the short answer text
  std::vector<std::string> evidence;   // exact substrings of the contexts
  std::string answerJson() const;      // {"answer": ..., "evidence": [...]}, compact
};

struct DemoCorpus {
  std::vector<QaExample> train;  // 290 in the lab
  std::vector<QaExample> eval;   // 30, frozen; facts disjoint from train
};

// The instruction every example carries (the system prompt of the llama3 template).
const std::string& demoSystemPrompt();
// The user turn: the question followed by numbered contexts.
std::string demoUserPrompt(const QaExample& ex);

DemoCorpus makeDemoCorpus(std::uint64_t seed = 17, int trainCount = 290, int evalCount = 30);

// Writes DIR/demo_train.json (alpaca, with system), DIR/dataset_info.json (entry "demo"),
// DIR/demo_eval.jsonl ({id, question, contexts, reference}); each file via temp + rename.
void writeDemoData(const DemoCorpus& corpus, const std::string& dir);

}  // namespace crosslab::demo
