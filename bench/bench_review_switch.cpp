// Benchmark: Review panel question switching with large contexts, offscreen. Builds
// questions with 8 contexts of CONTEXT_KB each and two models' outputs (5 quotes each),
// then times j (next question) including the repaint it triggers; prints ms per switch.
// Usage: bench_review_switch [CONTEXT_KB=8] [QUESTIONS=40]
#include <QApplication>
#include <QElapsedTimer>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <random>

#include "backends/lab_session.h"
#include "widgets/review_panel.h"

namespace {

using nlohmann::json;

std::string text(std::mt19937& rng, size_t bytes) {
  static const char* words[] = {"loss", "gate", "quote", "context", "venue", "adapter", "throughput", "judge",
                                "grounded", "evidence", "parity", "silicon", "token", "epoch", "café", "naïve"};
  std::uniform_int_distribution<int> pick(0, 15);
  std::string s;
  while (s.size() < bytes) s += (s.empty() ? "" : " ") + std::string(words[pick(rng)]) + std::to_string(pick(rng));
  return s;
}

std::shared_ptr<crosslab::widgets::ReviewSnapshot> snapshot(size_t questions, size_t contextBytes) {
  std::mt19937 rng(7);
  std::string evalText;
  std::vector<crosslab::eval::OutputRecord> outputs;
  std::vector<std::int64_t> ids;
  for (size_t q = 0; q < questions; ++q) {
    std::vector<std::string> ctx;
    for (int c = 0; c < 8; ++c) ctx.push_back(text(rng, contextBytes));
    const std::string id = "q" + std::to_string(q);
    evalText += json{{"id", id}, {"question", "question " + id}, {"contexts", ctx}}.dump() + "\n";
    for (const char* model : {"alpha", "beta"}) {
      std::vector<std::string> quotes;
      for (int k = 0; k < 4; ++k) {  // ~10 words from the middle of a context, cut at spaces
        const std::string& c = ctx[static_cast<size_t>(k)];
        const size_t b = c.find(' ', contextBytes / 2) + 1, e = c.find(' ', b + 60);
        quotes.push_back(c.substr(b, e - b));
      }
      quotes.push_back("a quote that is nowhere in the contexts at all");
      outputs.push_back({id, model, json{{"answer", "an answer"}, {"evidence", quotes}}.dump()});
      ids.push_back(static_cast<std::int64_t>(ids.size() + 1));
    }
  }
  return crosslab::widgets::makeReviewSnapshot(crosslab::eval::parseEvalSet(evalText, "bench"), outputs, ids);
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const size_t kb = argc > 1 ? std::stoul(argv[1]) : 8, questions = argc > 2 ? std::stoul(argv[2]) : 40;
  crosslab::backends::LabSession session;
  crosslab::widgets::ReviewPanel panel(&session);
  panel.resize(1400, 900);
  panel.show();
  panel.model()->setSnapshot(snapshot(questions, kb * 1024));
  QApplication::processEvents();
  std::vector<double> ms;
  for (size_t i = 1; i < questions; ++i) {
    QElapsedTimer t;
    t.start();
    panel.handleKey(Qt::Key_J);
    QApplication::processEvents();  // includes the repaint of the new question
    ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("review panel: switch question (8 contexts x %zu KB = %zu KB per question, 2 outputs x 5 quotes), %zu switches\n",
              kb, 8 * kb, ms.size());
  std::printf("  median %.1f ms, p90 %.1f ms, max %.1f ms\n", ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back());
  return 0;
}
