#pragma once
// A progress line on stderr ("judged 3/30"): rewritten in place with "\r" on a terminal;
// elsewhere (a log, a pipe, the GUI reading a child) whole lines, at most one per tenth of
// the work, so stderr never runs together. Always ends with a newline.

#include <unistd.h>

#include <iostream>
#include <string>

namespace crosslab::cli {

class Progress {
 public:
  Progress(std::ostream& os, std::string verb, size_t total)
      : os_(os), verb_(std::move(verb)), total_(total), terminal_(&os == &std::cerr && ::isatty(2) == 1) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  // `done` of `total` (bytes, questions …); `note` follows the count ("12.5 MB/s").
  void step(size_t done, const std::string& note = {}) {
    const std::string line = verb_ + " " + std::to_string(done) + "/" + std::to_string(total_) + (note.empty() ? "" : " " + note);
    if (terminal_) {
      os_ << "\r" << line << "\x1b[K" << std::flush;
      open_ = true;
      return;
    }
    const long tenths = total_ ? static_cast<long>(done * 10 / total_) : 10;
    if (tenths == lastTenths_) return;
    lastTenths_ = tenths;
    os_ << line << "\n" << std::flush;
  }
  // Ends an in-place line (idempotent).
  void finish() {
    if (open_) os_ << "\n" << std::flush;
    open_ = false;
  }

 private:
  std::ostream& os_;
  std::string verb_;
  size_t total_;
  bool terminal_;
  bool open_ = false;
  long lastTenths_ = -1;
};

}  // namespace crosslab::cli
