#include "core/eval/output_diff.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/eval/format_checker.h"

namespace crosslab::eval {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> words;
  std::istringstream in(s);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Above this many LCS cells (n*m) the middle is shown as one removal + one addition.
constexpr size_t kMaxCells = 4'000'000;

bool allSame(const std::vector<DiffToken>& t) {
  return std::all_of(t.begin(), t.end(), [](const DiffToken& d) { return d.op == DiffToken::Same; });
}

}  // namespace

bool OutputDiff::identical() const { return json ? allSame(answer) && allSame(evidence) : allSame(words); }

std::vector<DiffToken> wordDiff(const std::string& a, const std::string& b) {
  const auto x = split(a), y = split(b);
  size_t pre = 0;
  while (pre < x.size() && pre < y.size() && x[pre] == y[pre]) ++pre;
  size_t suf = 0;
  while (suf < x.size() - pre && suf < y.size() - pre && x[x.size() - 1 - suf] == y[y.size() - 1 - suf]) ++suf;
  const size_t n = x.size() - pre - suf, m = y.size() - pre - suf;
  std::vector<DiffToken> out;
  for (size_t i = 0; i < pre; ++i) out.push_back({DiffToken::Same, x[i]});
  if (n * m > kMaxCells) {
    for (size_t i = 0; i < n; ++i) out.push_back({DiffToken::Removed, x[pre + i]});
    for (size_t j = 0; j < m; ++j) out.push_back({DiffToken::Added, y[pre + j]});
  } else {
    // lcs[i][j] = LCS length of x[pre+i..] and y[pre+j..], (n+1) x (m+1)
    std::vector<unsigned> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> unsigned& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        at(i, j) = x[pre + i] == y[pre + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[pre + i] == y[pre + j]) out.push_back({DiffToken::Same, x[pre + i]}), ++i, ++j;
      else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) out.push_back({DiffToken::Removed, x[pre + i++]});
      else out.push_back({DiffToken::Added, y[pre + j++]});
    }
  }
  for (size_t k = suf; k-- > 0;) out.push_back({DiffToken::Same, x[x.size() - 1 - k]});
  return out;
}

OutputDiff diffOutputs(const std::string& a, const std::string& b) {
  OutputDiff d;
  const auto fa = FormatChecker::check(a), fb = FormatChecker::check(b);
  if (!fa.parsed() || !fb.parsed()) {
    d.words = wordDiff(a, b);
    return d;
  }
  d.json = true;
  d.answer = wordDiff(fa.answer, fb.answer);
  const std::set<std::string> inA(fa.evidence.begin(), fa.evidence.end()), inB(fb.evidence.begin(), fb.evidence.end());
  for (const auto& q : fa.evidence) d.evidence.push_back({inB.count(q) ? DiffToken::Same : DiffToken::Removed, q});
  for (const auto& q : fb.evidence)
    if (!inA.count(q)) d.evidence.push_back({DiffToken::Added, q});
  return d;
}

}  // namespace crosslab::eval

namespace crosslab::eval {

bool outputsIdentical(const std::string& a, const std::string& b) {
  const auto fa = FormatChecker::check(a), fb = FormatChecker::check(b);
  if (!fa.parsed() || !fb.parsed()) return split(a) == split(b);
  if (split(fa.answer) != split(fb.answer)) return false;
  return std::set<std::string>(fa.evidence.begin(), fa.evidence.end()) ==
         std::set<std::string>(fb.evidence.begin(), fb.evidence.end());
}

}  // namespace crosslab::eval
