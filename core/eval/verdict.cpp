#include "core/eval/verdict.h"

#include <utility>

namespace crosslab::eval {
namespace {

constexpr std::pair<Verdict, const char*> kNames[] = {
    {Verdict::Accept, "accept"}, {Verdict::Reject, "reject"},           {Verdict::Abstain, "abstain"},
    {Verdict::NotMeasured, "not_measured"}, {Verdict::X, "x"},          {Verdict::Y, "y"},
    {Verdict::Tie, "tie"},       {Verdict::Inconsistent, "inconsistent"}, {Verdict::Disagree, "disagree"},
};

}  // namespace

const char* verdictName(Verdict v) {
  for (const auto& [verdict, name] : kNames)
    if (verdict == v) return name;
  return "other";
}

Verdict parseVerdict(const std::string& name) {
  for (const auto& [verdict, text] : kNames)
    if (name == text) return verdict;
  return Verdict::Other;
}

}  // namespace crosslab::eval
