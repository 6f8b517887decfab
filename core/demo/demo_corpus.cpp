#include "core/demo/demo_corpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace crosslab::demo {
namespace {

using nlohmann::json;

// splitmix64: tiny, portable, and the same sequence everywhere (std:: distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(below(static_cast<int>(v.size())))]; }

 private:
  std::uint64_t s_;
};

const std::vector<std::string> kVenues = {"Northwind Compute", "Helios GPU Cloud", "Quarry Labs", "Tidewater AI",
                                          "Basalt Cloud", "Larkspur Systems", "Meridian Racks", "Cobalt Yard"};
const std::vector<std::string> kAccels = {"MI300X", "MI355X", "H100", "H200", "L40S", "A100", "GB10", "MI250"};
const std::vector<std::string> kRegions = {"us-east-2", "eu-north-1", "ap-south-1", "us-west-1", "eu-central-2",
                                           "ca-east-1"};
const std::vector<std::string> kModels = {"Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.2 3B", "Llama 3.2 1B"};
const std::vector<std::string> kIncidents = {
    "the tokenizer files were missing after a download was killed early",
    "the GPU ran out of memory under plain ZeRO-3",
    "a stale apt index blocked python3-venv",
    "root-owned lock files blocked the Hugging Face cache",
    "CUDA graph capture hung with runtime LoRA",
    "the serving image did not know the model architecture",
    "the SSH key was not registered with the provider",
    "the disk filled up while pulling the serving image"};
const std::vector<std::string> kFixes = {"relaunching with the full snapshot", "enabling CPU offload",
                                         "running apt-get update first", "pointing HF_HOME at a fresh folder",
                                         "forcing eager mode", "switching to the nightly image",
                                         "registering the key again", "mounting a larger volume"};

std::string money(int cents) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%d.%02d", cents / 100, cents % 100);
  return buf;
}

// One fact: the passage that states it, and the questions it can answer with their
// answers and the exact evidence sentence(s) inside the passage.
struct Fact {
  std::string passage;
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> qa;  // question -> (answer, evidence)
};

Fact priceFact(Rng& r, int n) {
  const std::string venue = r.pick(kVenues), acc = r.pick(kAccels), region = r.pick(kRegions);
  const int gpus = 1 << r.below(4);
  const int cents = (150 + r.below(700)) * gpus;
  const int minimum = r.pick(std::vector<int>{1, 10, 30, 60});
  const std::string box = "BOX-" + std::to_string(n);
  const std::string s1 = box + " is a " + std::to_string(gpus) + "x " + acc + " VM from " + venue + " in " + region + ".";
  const std::string s2 = "It lists at " + money(cents) + " per hour with a " + std::to_string(minimum) + "-minute minimum.";
  Fact f;
  f.passage = s1 + " " + s2 + " Snapshots are not offered, so each life starts from a bare image.";
  f.qa.push_back({"What does " + box + " cost per hour?", {money(cents) + " per hour", s2}});
  f.qa.push_back({"Which accelerator does " + box + " have, and how many?", {std::to_string(gpus) + "x " + acc, s1}});
  f.qa.push_back({"What is the minimum billing for " + box + "?", {std::to_string(minimum) + " minutes", s2}});
  f.qa.push_back({"In which region does " + box + " run?", {region, s1}});
  return f;
}

Fact runFact(Rng& r, int n) {
  const std::string model = r.pick(kModels), acc = r.pick(kAccels);
  const std::string run = "run R" + std::to_string(100 + n);
  const int wall = 4 + r.below(90);
  const int l0 = 40 + r.below(30), l1 = 10 + r.below(15);
  const int cost = 20 + r.below(900);
  const std::string s1 = "The " + model + " LoRA " + run + " trained on " + acc + " for " + std::to_string(wall) + " minutes.";
  const std::string s2 = "Its loss fell from 0." + std::to_string(l0) + " to 0." + std::to_string(l1) + " over 111 steps.";
  const std::string s3 = "The meter charged " + money(cost) + " for the run.";
  Fact f;
  f.passage = s1 + " " + s2 + " " + s3;
  f.qa.push_back({"How long did " + run + " train?", {std::to_string(wall) + " minutes", s1}});
  f.qa.push_back({"What was the final loss of " + run + "?", {"0." + std::to_string(l1), s2}});
  f.qa.push_back({"What did " + run + " cost?", {money(cost), s3}});
  f.qa.push_back({"Which model and accelerator did " + run + " use?", {model + " on " + acc, s1}});
  return f;
}

Fact incidentFact(Rng& r, int n) {
  const int k = r.below(static_cast<int>(kIncidents.size()));
  const int minutes = 3 + r.below(50);
  const std::string id = "incident F-" + std::to_string(n);
  const std::string s1 = "In " + id + ", " + kIncidents[static_cast<size_t>(k)] + ".";
  const std::string s2 = "It was fixed by " + kFixes[static_cast<size_t>(k)] + " and cost about " + std::to_string(minutes) + " minutes.";
  Fact f;
  f.passage = s1 + " " + s2;
  f.qa.push_back({"What went wrong in " + id + "?", {kIncidents[static_cast<size_t>(k)], s1}});
  f.qa.push_back({"How was " + id + " fixed?", {kFixes[static_cast<size_t>(k)], s2}});
  f.qa.push_back({"How many minutes did " + id + " cost?", {std::to_string(minutes) + " minutes", s2}});
  return f;
}

Fact makeFact(Rng& r, int n) {
  switch (r.below(3)) {
    case 0: return priceFact(r, n);
    case 1: return runFact(r, n);
    default: return incidentFact(r, n);
  }
}

std::vector<QaExample> makeExamples(Rng& r, const std::vector<Fact>& facts, const std::vector<Fact>& distractors, int count,
                                    const std::string& prefix) {
  std::vector<QaExample> out;
  std::set<std::string> seen;
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    const Fact& f = facts[static_cast<size_t>(i) % facts.size()];
    const auto& [question, ans] = r.pick(f.qa);
    if (!seen.insert(question).second) {
      if (i > count * 50) throw std::runtime_error("demo corpus: not enough distinct questions");
      continue;
    }
    QaExample ex;
    ex.id = prefix + std::to_string(out.size() + 1);
    ex.question = question;
    ex.answer = ans.first;
    ex.evidence = {ans.second};
    ex.contexts = {f.passage};
    const int extra = 1 + r.below(3);
    for (int d = 0; d < extra; ++d) ex.contexts.push_back(r.pick(distractors).passage);
    // The supporting passage lands anywhere among the contexts.
    std::swap(ex.contexts[0], ex.contexts[static_cast<size_t>(r.below(static_cast<int>(ex.contexts.size())))]);
    out.push_back(std::move(ex));
  }
  return out;
}

void writeAtomically(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot rename " + tmp + ": " + ec.message());
}

}  // namespace

std::string QaExample::answerJson() const { return json{{"answer", answer}, {"evidence", evidence}}.dump(); }

const std::string& demoSystemPrompt() {
  static const std::string s =
      "Answer the question using only the contexts. Reply with one JSON object: "
      "{\"answer\": \"...\", \"evidence\": [\"exact quote from a context\", ...]}.";
  return s;
}

std::string demoUserPrompt(const QaExample& ex) {
  std::string out = "Question: " + ex.question + "\n\nContexts:";
  for (size_t i = 0; i < ex.contexts.size(); ++i) out += "\n[" + std::to_string(i + 1) + "] " + ex.contexts[i];
  return out;
}

DemoCorpus makeDemoCorpus(std::uint64_t seed, int trainCount, int evalCount) {
  Rng r(seed);
  // Disjoint fact pools: eval questions ask about facts the model never trained on.
  const int trainFacts = std::max(1, trainCount / 2), evalFacts = std::max(1, evalCount);
  std::vector<Fact> train, eval, distractors;
  for (int i = 0; i < trainFacts; ++i) train.push_back(makeFact(r, i + 1));
  for (int i = 0; i < evalFacts; ++i) eval.push_back(makeFact(r, 1000 + i));
  for (int i = 0; i < 40; ++i) distractors.push_back(makeFact(r, 2000 + i));
  DemoCorpus c;
  c.train = makeExamples(r, train, distractors, trainCount, "train-");
  c.eval = makeExamples(r, eval, distractors, evalCount, "eval-");
  return c;
}

void writeDemoData(const DemoCorpus& corpus, const std::string& dir) {
  std::filesystem::create_directories(dir);
  json train = json::array();
  for (const auto& ex : corpus.train)
    train.push_back({{"instruction", demoUserPrompt(ex)}, {"input", ""}, {"output", ex.answerJson()}, {"system", demoSystemPrompt()}});
  writeAtomically(std::filesystem::path(dir) / "demo_train.json", train.dump(1) + "\n");
  const json info = {{"demo", {{"file_name", "demo_train.json"}, {"formatting", "alpaca"},
                               {"columns", {{"prompt", "instruction"}, {"query", "input"}, {"response", "output"}, {"system", "system"}}}}}};
  writeAtomically(std::filesystem::path(dir) / "dataset_info.json", info.dump(2) + "\n");
  std::string lines;
  for (const auto& ex : corpus.eval)
    lines += json{{"id", ex.id}, {"question", ex.question}, {"contexts", ex.contexts}, {"reference", ex.answerJson()}}.dump() + "\n";
  writeAtomically(std::filesystem::path(dir) / "demo_eval.jsonl", lines);
}

}  // namespace crosslab::demo
