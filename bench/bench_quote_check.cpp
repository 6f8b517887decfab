// Benchmark: the mechanical instruments (`eval check`) on 10,000 samples x 5 quotes x
// 8 contexts of ~2 KB. Writes the eval set and outputs as JSONL to a temp folder, then
// times load + check exactly as `crosslab-cli eval check` does, and prints samples/s.
// Usage: bench_quote_check [SAMPLES] [--keep DIR]
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/eval/eval_data.h"
#include "core/eval/output_check.h"

namespace {

using nlohmann::json;

std::vector<std::string> vocabulary(std::mt19937& rng) {
  std::vector<std::string> words;
  std::uniform_int_distribution<int> len(2, 9), letter(0, 25);
  for (int i = 0; i < 5000; ++i) {
    std::string w;
    for (int k = len(rng); k > 0; --k) w += static_cast<char>('a' + letter(rng));
    words.push_back(w);
  }
  return words;
}

std::string words(std::mt19937& rng, const std::vector<std::string>& vocab, size_t bytes) {
  std::uniform_int_distribution<size_t> pick(0, vocab.size() - 1);
  std::string s;
  while (s.size() < bytes) s += (s.empty() ? "" : " ") + vocab[pick(rng)];
  return s;
}

// A run of `n` words starting at a random word boundary of `text`.
std::string slice(std::mt19937& rng, const std::string& text, int n) {
  std::uniform_int_distribution<size_t> at(0, text.size() / 2);
  size_t b = text.find(' ', at(rng)) + 1, e = b;
  for (int i = 0; i < n && e != std::string::npos; ++i) e = text.find(' ', e + 1);
  return text.substr(b, (e == std::string::npos ? text.size() : e) - b);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t samples = argc > 1 && argv[1][0] != '-' ? std::stoul(argv[1]) : 10000;
  std::mt19937 rng(42);
  const auto vocab = vocabulary(rng);
  std::string evalText, outputsText;
  for (size_t i = 0; i < samples; ++i) {
    std::vector<std::string> ctx;
    for (int c = 0; c < 8; ++c) ctx.push_back(words(rng, vocab, 2048));
    const std::string id = "q" + std::to_string(i);
    evalText += json{{"id", id}, {"question", "question " + id}, {"contexts", ctx}}.dump() + "\n";
    std::vector<std::string> quotes;
    for (int k = 0; k < 3; ++k) quotes.push_back(slice(rng, ctx[static_cast<size_t>(k)], 12));  // exact
    std::string fuzzy = slice(rng, ctx[3], 16);
    fuzzy += " extra";                                        // one word added at the end: fuzzy
    quotes.push_back(fuzzy);
    quotes.push_back(words(rng, vocab, 80));                  // fabricated
    outputsText += json{{"id", id}, {"model", "bench"}, {"output", json{{"answer", "x"}, {"evidence", quotes}}.dump()}}.dump() + "\n";
  }
  const auto dir = std::filesystem::temp_directory_path() / "crosslab-bench-quotes";
  std::filesystem::create_directories(dir);
  crosslab::eval::writeFileAtomic(dir / "eval.jsonl", evalText);
  crosslab::eval::writeFileAtomic(dir / "outputs.jsonl", outputsText);

  const auto t0 = std::chrono::steady_clock::now();
  const auto evalSet = crosslab::eval::loadEvalSet(dir / "eval.jsonl");
  const auto outputs = crosslab::eval::loadOutputs(dir / "outputs.jsonl");
  const auto t1 = std::chrono::steady_clock::now();
  const auto report = crosslab::eval::checkOutputs(evalSet, outputs);
  const auto t2 = std::chrono::steady_clock::now();
  const double load = std::chrono::duration<double>(t1 - t0).count(), check = std::chrono::duration<double>(t2 - t1).count();
  const auto& m = report.summary.at("bench");
  std::printf("eval check: %zu samples x 5 quotes x 8 contexts of 2 KB (eval file %.1f MB)\n", samples,
              static_cast<double>(evalText.size()) / 1e6);
  std::printf("  quotes %zu: exact %zu, fuzzy %zu, fabricated %zu (%s)\n", m.quotes, m.exact, m.fuzzy, m.fabricated,
              m.fidelityLine().c_str());
  std::printf("  load (parse + SHA-256) %.2f s, check %.2f s, total %.2f s\n", load, check, load + check);
  std::printf("  %.0f samples/s (check only), %.0f samples/s (load + check)\n", static_cast<double>(samples) / check,
              static_cast<double>(samples) / (load + check));
  std::printf("  files: %s (time `crosslab-cli eval check --eval %s/eval.jsonl --outputs %s/outputs.jsonl`)\n",
              dir.c_str(), dir.c_str(), dir.c_str());
  return 0;
}
