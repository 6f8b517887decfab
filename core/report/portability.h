#pragma once
// The portability verdict — the lab's one question, answered from the record. Runs that
// share the base model (weights hash), the data (hash) and the recipe, but not the venue,
// form a replication group. For each group: the loss curves overlaid, the mean and spread
// of the loss over the last 10% of steps, and for the models' answers to the same frozen
// eval set a paired comparison per instrument (exact McNemar test on per-question
// outcomes for format validity and gate acceptance; fabricated quotes side by side),
// ending in a plain verdict that never states more than the instruments show.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace crosslab::report {

// Two-sided exact McNemar p-value for b (A accepts, B does not) and c (the reverse)
// discordant pairs: the binomial(b + c, 1/2) tail, doubled, capped at 1.
double mcnemarExactP(int b, int c);

struct LossTail {
  double mean = 0, spread = 0;  // spread: standard deviation over the tail's points
  int points = 0;
  std::int64_t fromStep = 0, toStep = 0;
};
// Over the steps in the last 10% of the run's steps (at least one point).
std::optional<LossTail> lastTenthLoss(const std::vector<std::pair<double, double>>& stepLoss);

// One run as the verdict sees it.
struct ReplicaRun {
  std::int64_t runId = 0;
  std::string run, venue;
  std::string weightsSha, dataSha, recipeSha;  // empty: unknown (never grouped)
  std::vector<std::pair<double, double>> loss;  // (step, loss)
  std::string model;  // the samples' model label of its answers ("" when none)
};

// Per-question outcomes of one model on one instrument: question id -> accepted.
using Outcomes = std::map<std::string, bool>;

struct ModelAnswers {
  std::string evalSha;
  std::map<std::string, Outcomes> instruments;  // "format", "gate:<name>" -> outcomes
  int quotes = 0, fabricated = 0;
  bool quotesMeasured = false;
};

struct PairedResult {
  std::string instrument;
  int n = 0;                 // questions both answered and the instrument judged
  int aAccepted = 0, bAccepted = 0;
  int b = 0, c = 0;          // discordant: A only, B only
  double p = 1;
  bool differs() const { return p < 0.05; }
};

struct Comparison {
  std::string a, b;  // run names
  std::vector<PairedResult> instruments;
  std::optional<std::pair<int, int>> quotesA, quotesB;  // (fabricated, quotes)
  std::string evalSha;
};

struct ReplicationGroup {
  std::string weightsSha, dataSha, recipeSha;
  std::vector<ReplicaRun> runs;
  std::vector<std::optional<LossTail>> tails;
  std::vector<Comparison> comparisons;  // pairs of runs on different venues
  std::string verdict;
};

// Groups with runs on at least two venues; `answers` maps a model label to its answers.
std::vector<ReplicationGroup> replicationGroups(const std::vector<ReplicaRun>& runs,
                                                const std::map<std::string, ModelAnswers>& answers);
Comparison compareAnswers(const std::string& a, const ModelAnswers& answersA, const std::string& b,
                          const ModelAnswers& answersB);
std::string verdictFor(const ReplicationGroup& group);

}  // namespace crosslab::report
