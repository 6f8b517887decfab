#include "core/demo/demo_progress.h"

#include <cstdio>
#include <cstdlib>

namespace crosslab::demo {
namespace {

const std::string kPrefix = "demo: ";

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

bool startsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// "N/T" at the start of `s`: both positive-or-zero integers, N <= T.
std::optional<std::pair<int, int>> fraction(const std::string& s) {
  int n = 0, t = 0, used = 0;
  if (std::sscanf(s.c_str(), "%d/%d%n", &n, &t, &used) != 2 || used <= 0 || n < 0 || t <= 0 || n > t) return std::nullopt;
  if (size_t(used) < s.size() && s[size_t(used)] != ' ') return std::nullopt;
  return std::make_pair(n, t);
}

}  // namespace

std::string demoPhaseBeginLine(const std::string& phase) { return kPrefix + phase + " ..."; }

std::string demoPhaseEndLine(const std::string& phase, double seconds) {
  return kPrefix + phase + " done in " + fixed(seconds, 1) + " s";
}

std::string demoPretrainLine(int step, int total, double loss, double lr) {
  return kPrefix + "pretrain step " + std::to_string(step) + "/" + std::to_string(total) + " loss " + fixed(loss, 4) +
         " lr " + fixed(lr, 6);
}

std::string demoLoraSizeLine(int totalSteps) { return kPrefix + "lora step 0/" + std::to_string(totalSteps); }

std::string demoEvalLine(const std::string& label, int done, int total) {
  return kPrefix + "eval " + label + " " + std::to_string(done) + "/" + std::to_string(total);
}

std::optional<DemoProgress> parseDemoProgressLine(const std::string& line, const std::string& currentPhase) {
  if (currentPhase == "lora" && startsWith(line, "step ")) {
    if (const auto f = fraction(line.substr(5))) return DemoProgress{"lora", DemoProgress::Kind::Step, f->first, f->second};
    return std::nullopt;
  }
  if (!startsWith(line, kPrefix)) return std::nullopt;
  const std::string rest = line.substr(kPrefix.size());
  for (const std::string phase : {"pretrain", "lora"}) {
    const std::string head = phase + " step ";
    if (!startsWith(rest, head)) continue;
    if (const auto f = fraction(rest.substr(head.size()))) return DemoProgress{phase, DemoProgress::Kind::Step, f->first, f->second};
    return std::nullopt;
  }
  if (startsWith(rest, "eval ")) {  // "eval LABEL N/T", or the phases "eval base ..." / "eval lora done …"
    const auto space = rest.find(' ', 5);
    if (space != std::string::npos)
      if (const auto f = fraction(rest.substr(space + 1)))
        return DemoProgress{currentPhase, DemoProgress::Kind::Step, f->first, f->second};
  }
  if (rest.size() > 4 && rest.compare(rest.size() - 4, 4, " ...") == 0)
    return DemoProgress{rest.substr(0, rest.size() - 4), DemoProgress::Kind::Begin, 0, 0};
  const auto done = rest.find(" done in ");
  if (done != std::string::npos && done > 0) return DemoProgress{rest.substr(0, done), DemoProgress::Kind::End, 0, 0};
  return std::nullopt;
}

std::optional<DemoStage> demoStageOf(const std::string& phase) {
  if (phase == "data" || phase == "tokenizer" || phase == "base model") return DemoStage::Tokenizer;
  if (phase == "pretrain") return DemoStage::Pretrain;
  if (phase == "lora") return DemoStage::Lora;
  if (phase == "eval base" || phase == "eval lora") return DemoStage::Eval;
  return std::nullopt;
}

}  // namespace crosslab::demo
