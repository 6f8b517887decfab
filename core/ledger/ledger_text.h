#pragma once
// The lab's ledger as `crosslab-cli ledger` prints it: a table per life and in total, or
// JSON with the exact keys
//   {"lives": [{"box", "price_per_hour", "min_minutes", "used_minutes", "billed_minutes",
//     "billed_usd", "compute_minutes", "staging_minutes", "debug_minutes", "idle_minutes",
//     "compute_usd", "staging_usd", "debug_usd", "idle_usd", "ratio"}],
//    "totals": {the minute/usd keys and ratio, summed, plus "other_usd", "credit_usd"}}
// ("ratio" a number, null when compute is zero).

#include <string>

#include "core/ledger/lab_ledger.h"

namespace crosslab::report {
class Redactor;
}

namespace crosslab::ledger {

std::string ledgerJson(const LabLedger& ledger, const report::Redactor* redactor);
std::string ledgerTable(const LabLedger& ledger, const report::Redactor* redactor);
// "12.5 min", "$0.44" — the ledger's number formats, shared by table, report and panel.
std::string formatMinutes(double minutes);
std::string formatUsd(double usd);
std::string formatRate(std::optional<double> mbPerSecond);  // "35.2 MB/s" or "—"
std::string formatBytes(std::int64_t bytes);               // "16.06 GB"

}  // namespace crosslab::ledger
