#pragma once
// `crosslab-cli report` and the Ledger panel's Export report…: the lab's write-up from the
// store alone — training, serving, quality (with the instruments table), the availability
// ladder and timeline, the friction log, the cost ledger with its staging split and
// transfer rates, loss and throughput charts, the portability verdict, and an appendix
// naming the rows behind every number. Redacted by default; the secret guard runs over
// every file before it is written (temp file + rename).

#include <filesystem>
#include <string>
#include <vector>

#include "core/report/document.h"
#include "core/venues/secret_guard.h"

namespace crosslab::store {
class LabStore;
}

namespace crosslab::report {

struct ReportOptions {
  bool redact = true;
  double now = 0;  // epoch seconds for live lives; 0: now
};

Document buildReport(store::LabStore& lab, const ReportOptions& options);

enum class Format { Markdown, Html };
// "md,html" -> formats; throws std::invalid_argument naming an unknown one.
std::vector<Format> parseFormats(const std::string& list);

// Writes DIR/report.md (with DIR/charts/*.svg) and/or DIR/report.html; returns the files.
// Throws venues::SecretLeak (nothing written) when a secret would appear in any of them.
std::vector<std::filesystem::path> writeReport(store::LabStore& lab, const std::filesystem::path& dir,
                                               const std::vector<Format>& formats, const venues::SecretGuard& guard,
                                               const ReportOptions& options);

}  // namespace crosslab::report
