#include "core/ledger/derivation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace crosslab::ledger {
namespace {

// A set of disjoint half-open time spans [a, b), kept sorted and merged.
class Spans {
 public:
  void add(double a, double b) {
    if (b > a) spans_.emplace_back(a, b);
    normalized_ = false;
  }
  void add(const Spans& other) {
    for (const auto& s : other.spans_) add(s.first, s.second);
  }
  // This set without anything in `other`.
  Spans minus(const Spans& other) const {
    Spans out;
    const auto a = normalized();
    const auto b = other.normalized();
    for (const auto& [lo, hi] : a) {
      double cursor = lo;
      for (const auto& [blo, bhi] : b) {
        if (bhi <= cursor || blo >= hi) continue;
        if (blo > cursor) out.add(cursor, blo);
        cursor = std::max(cursor, bhi);
        if (cursor >= hi) break;
      }
      if (cursor < hi) out.add(cursor, hi);
    }
    return out;
  }
  double length() const {
    double total = 0;
    for (const auto& [a, b] : normalized()) total += b - a;
    return total;
  }

 private:
  std::vector<std::pair<double, double>> normalized() const {
    if (normalized_) return spans_;
    auto v = spans_;
    std::sort(v.begin(), v.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& s : v) {
      if (!merged.empty() && s.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, s.second);
      else
        merged.push_back(s);
    }
    return merged;
  }
  std::vector<std::pair<double, double>> spans_;
  bool normalized_ = true;
};

struct Clipped {
  double start, end;
  bool finished;
};

// Work items inside [p, d], with their status resolved (running: finished while alive).
std::vector<Clipped> clipWork(const BoxLife& life, double p, double d) {
  std::vector<Clipped> out;
  for (const auto& w : life.work) {
    if (!countsAsWork(w.kind)) continue;
    const double s = std::max(w.start, p);
    const double e = std::min(w.end.value_or(d), d);
    if (s > d || e < p) continue;  // wholly outside the life
    const bool finished =
        w.status == WorkStatus::Finished || (w.status == WorkStatus::Running && life.alive());
    out.push_back({s, std::max(s, e), finished});
  }
  return out;
}

}  // namespace

LifeLedger derive(const BoxLife& life, double now) {
  LifeLedger r;
  const double p = life.provisioned;
  const double d = std::max(p, life.deleted.value_or(now));
  r.end = d;
  const auto items = clipWork(life, p, d);

  Spans compute, unfinished, gaps;
  double lastEnd = p;
  for (const auto& it : items) {
    (it.finished ? compute : unfinished).add(it.start, it.end);
    lastEnd = std::max(lastEnd, it.end);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].finished) continue;
    // The gap to the next work item to start after this one ended.
    std::optional<double> next;
    for (size_t j = 0; j < items.size(); ++j)
      if (j != i && items[j].start >= items[i].end) next = std::min(next.value_or(items[j].start), items[j].start);
    if (next) gaps.add(items[i].end, *next);
  }
  Spans debug = unfinished.minus(compute);
  debug.add(gaps.minus(compute));
  Spans worked = compute;
  worked.add(debug);
  Spans before;
  before.add(p, lastEnd);
  r.lastWorkEnd = lastEnd;

  auto& m = r.minutes;
  m.used = (d - p) / 60.0;
  m.billed = std::max(static_cast<double>(std::max(0, life.minMinutes)), std::ceil(m.used - 1e-9));
  m.compute = compute.length() / 60.0;
  m.debug = debug.length() / 60.0;
  m.staging = before.minus(worked).length() / 60.0;
  m.idle = (d - lastEnd) / 60.0 + (m.billed - m.used);

  const double perMinute = life.pricePerHour / 60.0;
  r.usd = {m.used * perMinute,    m.billed * perMinute, m.compute * perMinute,
           m.staging * perMinute, m.debug * perMinute,  m.idle * perMinute};
  if (m.compute > 1e-9) r.ratio = (m.staging + m.debug) / m.compute;
  return r;
}

std::string formatRatio(std::optional<double> ratio) {
  if (!ratio) return "\u2014";
  char buf[32];
  if (*ratio >= 0.95)
    std::snprintf(buf, sizeof buf, "%.0f:1", *ratio);
  else if (*ratio >= 0.095)
    std::snprintf(buf, sizeof buf, "%.1f:1", *ratio);
  else
    std::snprintf(buf, sizeof buf, "%.2f:1", *ratio);
  return buf;
}

StagingForecast forecastStaging(const BoxLife& lastLife, double pricePerHour) {
  StagingForecast f;
  for (const auto& t : lastLife.transfers) {
    f.minutes += std::max(0.0, t.end - t.start) / 60.0;
    f.bytes += t.bytes;
  }
  f.usd = f.minutes * pricePerHour / 60.0;
  return f;
}

}  // namespace crosslab::ledger
