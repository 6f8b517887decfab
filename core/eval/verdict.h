#pragma once
// The verdicts instruments record (the `verdict` column of a verdict row), as one enum
// with its names in one place. "not_measured" is an instrument that never got an answer
// (every judge of a gate unreachable, say): it counts in no rate, never as a reject or 0%.

#include <string>

namespace crosslab::eval {

enum class Verdict {
  Accept,
  Reject,
  Abstain,      // a judge answered, but not in a form the rubric accepts
  NotMeasured,  // no judge answered at all (unreachable, refused, timed out)
  X,            // pairwise: the first model of the pair wins
  Y,            // … the second
  Tie,
  Inconsistent,  // pairwise: the two orders disagree
  Disagree,      // pairwise gate: the judges disagree
  Other,         // any other label (human comments, future instruments)
};

const char* verdictName(Verdict v);
Verdict parseVerdict(const std::string& name);
inline bool isMeasured(const std::string& name) { return parseVerdict(name) != Verdict::NotMeasured; }

}  // namespace crosslab::eval
