#pragma once
// Box lives as JSON Lines, one life a line (times ISO-8601 UTC) — what providers' own
// records and hand-run labs give, and what `ledger export` writes back:
//
//   {"box": "BOX-1", "provider": "hotaisle", "gpu": "MI300X", "gpus": 1, "price_per_hour": 2.99,
//    "min_minutes": 1, "provisioned_at": "…Z", "deleted_at": "…Z",
//    "work": [{"kind": "train", "name": "8b-lora", "start": "…Z", "end": "…Z", "status": "finished"}],
//    "transfers": [{"direction": "pull", "what": "weights", "bytes": 16060000000, "start": "…Z", "end": "…Z"}]}
//
// import → export → import is a fixed point. Bad input (a missing or unknown field, a
// wrong type, end before start, an unknown kind/status/direction, a life overlapping
// another life of the same box in the file or the lab) is refused with its line number,
// and nothing is recorded. A live life has "deleted_at": null; only it may hold work
// with "status": "running" and "end": null.

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ledger/box_life.h"

namespace crosslab::store {
class LabStore;
}
namespace crosslab::report {
class Redactor;
}

namespace crosslab::ledger {

class ImportError : public std::runtime_error {
 public:
  ImportError(int line, const std::string& what);
  int line() const { return line_; }

 private:
  int line_;
};

struct ParsedLife {
  int line = 0;
  BoxLife life;
};

// Every life of the stream; throws ImportError on the first bad line (blank lines skip).
std::vector<ParsedLife> parseLivesJsonl(std::istream& in);
// Records the lives in one transaction (refusing overlaps with the lab's lives of the same
// box by line number); returns how many. Nothing is recorded when it throws.
size_t importLives(store::LabStore& lab, const std::vector<ParsedLife>& lives);
// One line per life; `redactor` (may be null) labels boxes and redacts free text.
std::string exportLivesJsonl(const std::vector<BoxLife>& lives, const report::Redactor* redactor);

}  // namespace crosslab::ledger
