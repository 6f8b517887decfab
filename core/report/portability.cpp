#include "core/report/portability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

namespace crosslab::report {
namespace {

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pText(double p) { return p < 0.001 ? std::string("p < 0.001") : "p = " + fixed(p, 3); }

}  // namespace

double mcnemarExactP(int b, int c) {
  const int n = b + c;
  if (n == 0) return 1.0;
  const int k = std::min(b, c);
  // Σ_{i=0..k} C(n, i) / 2^n, in logs so that n in the thousands stays finite.
  double tail = 0;
  for (int i = 0; i <= k; ++i)
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  return std::min(1.0, 2 * tail);
}

std::optional<LossTail> lastTenthLoss(const std::vector<std::pair<double, double>>& stepLoss) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& p : stepLoss)
    if (std::isfinite(p.second)) pts.push_back(p);
  if (pts.empty()) return std::nullopt;
  std::sort(pts.begin(), pts.end());
  const double first = pts.front().first, last = pts.back().first;
  // Steps in the last 10% of the run: step > last − 10% of the span (at least the last point).
  const double from = last - 0.1 * (last - first + 1);
  LossTail t;
  double sum = 0, sq = 0;
  for (const auto& [step, loss] : pts)
    if (step > from) {
      if (t.points == 0) t.fromStep = static_cast<std::int64_t>(step);
      t.toStep = static_cast<std::int64_t>(step);
      ++t.points;
      sum += loss;
      sq += loss * loss;
    }
  t.mean = sum / t.points;
  t.spread = std::sqrt(std::max(0.0, sq / t.points - t.mean * t.mean));
  return t;
}

Comparison compareAnswers(const std::string& a, const ModelAnswers& A, const std::string& b, const ModelAnswers& B) {
  Comparison cmp;
  cmp.a = a;
  cmp.b = b;
  cmp.evalSha = A.evalSha;
  for (const auto& [instrument, outA] : A.instruments) {
    const auto itB = B.instruments.find(instrument);
    if (itB == B.instruments.end()) continue;
    PairedResult r;
    r.instrument = instrument;
    for (const auto& [q, okA] : outA) {
      const auto q2 = itB->second.find(q);
      if (q2 == itB->second.end()) continue;
      ++r.n;
      r.aAccepted += okA;
      r.bAccepted += q2->second;
      r.b += okA && !q2->second;
      r.c += !okA && q2->second;
    }
    if (r.n == 0) continue;
    r.p = mcnemarExactP(r.b, r.c);
    cmp.instruments.push_back(r);
  }
  if (A.quotesMeasured) cmp.quotesA = std::make_pair(A.fabricated, A.quotes);
  if (B.quotesMeasured) cmp.quotesB = std::make_pair(B.fabricated, B.quotes);
  return cmp;
}

std::string verdictFor(const ReplicationGroup& g) {
  std::string v;
  // Loss first: the training itself.
  std::vector<std::string> loss;
  bool lossApart = false;
  for (size_t i = 0; i < g.runs.size(); ++i)
    if (g.tails[i]) loss.push_back(g.runs[i].run + " " + fixed(g.tails[i]->mean, 3) + " ± " + fixed(g.tails[i]->spread, 3));
  for (size_t i = 0; i < g.runs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (g.tails[i] && g.tails[j]) {
        const double gap = std::abs(g.tails[i]->mean - g.tails[j]->mean);
        const double allowed = 2 * std::max({g.tails[i]->spread, g.tails[j]->spread, 1e-9});
        lossApart = lossApart || gap > allowed;
      }
  if (g.comparisons.empty() || std::all_of(g.comparisons.begin(), g.comparisons.end(),
                                           [](const Comparison& c) { return c.instruments.empty(); })) {
    v = "Not measured on the eval instruments: no answers of these runs' models to a shared frozen eval set "
        "are in the lab.";
  } else {
    std::vector<std::string> differs, parity;
    int minN = 1 << 30;
    for (const auto& c : g.comparisons)
      for (const auto& r : c.instruments) {
        minN = std::min(minN, r.n);
        const std::string line = r.instrument + " " + std::to_string(r.aAccepted) + "/" + std::to_string(r.n) +
                                 " (" + c.a + ") vs " + std::to_string(r.bAccepted) + "/" + std::to_string(r.n) + " (" +
                                 c.b + "), exact McNemar " + pText(r.p);
        (r.differs() ? differs : parity).push_back(line);
      }
    if (differs.empty()) {
      v = "Parity on every instrument measured: ";
      for (size_t i = 0; i < parity.size(); ++i) v += (i ? "; " : "") + parity[i];
      v += ". With " + std::to_string(minN) +
           " paired questions this shows no difference the test can detect; it does not prove a smaller one absent.";
    } else {
      v = "Differs on ";
      for (size_t i = 0; i < differs.size(); ++i) v += (i ? "; " : "") + differs[i];
      v += ".";
      if (!parity.empty()) {
        v += " No difference detected on ";
        for (size_t i = 0; i < parity.size(); ++i) v += (i ? "; " : "") + parity[i];
        v += ".";
      }
    }
    for (const auto& c : g.comparisons)
      if (c.quotesA && c.quotesB)
        v += " Fabricated quotes: " + std::to_string(c.quotesA->first) + " of " + std::to_string(c.quotesA->second) +
             " (" + c.a + ") vs " + std::to_string(c.quotesB->first) + " of " + std::to_string(c.quotesB->second) + " (" +
             c.b + ").";
  }
  if (!loss.empty()) {
    v += " Loss over the last 10% of steps: ";
    for (size_t i = 0; i < loss.size(); ++i) v += (i ? ", " : "") + loss[i];
    v += lossApart ? " — apart by more than twice their spread." : " — within twice their spread.";
  }
  return v;
}

std::vector<ReplicationGroup> replicationGroups(const std::vector<ReplicaRun>& runs,
                                                const std::map<std::string, ModelAnswers>& answers) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<ReplicaRun>> byKey;
  for (const auto& r : runs)
    if (!r.weightsSha.empty() && !r.dataSha.empty() && !r.recipeSha.empty())
      byKey[{r.weightsSha, r.dataSha, r.recipeSha}].push_back(r);
  std::vector<ReplicationGroup> groups;
  for (auto& [key, members] : byKey) {
    std::set<std::string> venues;
    for (const auto& m : members) venues.insert(m.venue);
    if (venues.size() < 2) continue;  // one venue: a repeat, not a replication
    ReplicationGroup g;
    std::tie(g.weightsSha, g.dataSha, g.recipeSha) = key;
    g.runs = members;
    for (const auto& m : members) g.tails.push_back(lastTenthLoss(m.loss));
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j) {
        if (members[i].venue == members[j].venue) continue;
        const auto a = answers.find(members[i].model), b = answers.find(members[j].model);
        if (members[i].model.empty() || members[j].model.empty() || a == answers.end() || b == answers.end() ||
            a->second.evalSha != b->second.evalSha) {
          Comparison none;
          none.a = members[i].run;
          none.b = members[j].run;
          g.comparisons.push_back(none);
          continue;
        }
        g.comparisons.push_back(compareAnswers(members[i].run, a->second, members[j].run, b->second));
      }
    g.verdict = verdictFor(g);
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace crosslab::report
