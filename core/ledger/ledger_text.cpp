#include "core/ledger/ledger_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/ledger/life_recorder.h"
#include "core/report/redactor.h"

namespace crosslab::ledger {
namespace {

using ojson = nlohmann::ordered_json;

double round6(double v) { return std::round(v * 1e6) / 1e6; }

void putSplit(ojson& j, const Split& minutes, const Split& usd, std::optional<double> ratio) {
  j["used_minutes"] = round6(minutes.used);
  j["billed_minutes"] = round6(minutes.billed);
  j["billed_usd"] = round6(usd.billed);
  j["compute_minutes"] = round6(minutes.compute);
  j["staging_minutes"] = round6(minutes.staging);
  j["debug_minutes"] = round6(minutes.debug);
  j["idle_minutes"] = round6(minutes.idle);
  j["compute_usd"] = round6(usd.compute);
  j["staging_usd"] = round6(usd.staging);
  j["debug_usd"] = round6(usd.debug);
  j["idle_usd"] = round6(usd.idle);
  j["ratio"] = ratio ? ojson(round6(*ratio)) : ojson(nullptr);
}

// `decimals` digits after the point, between `prefix` and `suffix`.
std::string fmt(const char* prefix, double v, int decimals, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%.*f%s", prefix, decimals, v, suffix);
  return buf;
}

std::string pad(std::string s, size_t width) {
  // Width in characters, not bytes ("—" is three bytes).
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars < width) s.append(width - chars, ' ');
  return s;
}

}  // namespace

std::string formatMinutes(double minutes) { return fmt("", minutes, 1, " min"); }
std::string formatUsd(double usd) { return fmt("$", usd, 2, ""); }
std::string formatRate(std::optional<double> mbPerSecond) {
  return mbPerSecond ? fmt("", *mbPerSecond, 1, " MB/s") : std::string("\u2014");
}
std::string formatBytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return fmt("", b / 1e9, 2, " GB");
  if (b >= 1e6) return fmt("", b / 1e6, 1, " MB");
  if (b >= 1e3) return fmt("", b / 1e3, 1, " kB");
  return fmt("", b, 0, " B");
}

std::string ledgerJson(const LabLedger& ledger, const report::Redactor* redactor) {
  ojson out;
  auto lives = ojson::array();
  for (const auto& row : ledger.lives) {
    ojson j;
    j["box"] = redactor ? redactor->boxLabel(row.life.box) : row.life.box;
    j["price_per_hour"] = row.life.pricePerHour;
    j["min_minutes"] = row.life.minMinutes;
    putSplit(j, row.ledger.minutes, row.ledger.usd, row.ledger.ratio);
    lives.push_back(std::move(j));
  }
  out["lives"] = std::move(lives);
  ojson totals;
  putSplit(totals, ledger.totals.minutes, ledger.totals.usd, ledger.totals.ratio);
  totals["other_usd"] = round6(ledger.totals.otherUsd);
  totals["credit_usd"] = round6(ledger.totals.creditUsd);
  out["totals"] = std::move(totals);
  return out.dump(2) + "\n";
}

std::string ledgerTable(const LabLedger& ledger, const report::Redactor* redactor) {
  std::string out;
  const auto label = [&](const std::string& box) { return redactor ? redactor->boxLabel(box) : box; };
  out += pad("life", 8) + pad("provisioned", 22) + pad("billed", 12) + pad("cost", 10) + pad("compute", 12) +
         pad("staging", 12) + pad("debug", 12) + pad("idle", 12) + "ratio\n";
  std::map<std::string, int> lifeNumber;
  for (const auto& row : ledger.lives) {
    const auto& m = row.ledger.minutes;
    const int n = ++lifeNumber[row.life.box];
    out += pad(label(row.life.box), 8) + pad(isoUtc(row.life.provisioned) + (row.life.alive() ? "*" : ""), 22) +
           pad(formatMinutes(m.billed), 12) + pad(formatUsd(row.ledger.usd.billed), 10) +
           pad(formatMinutes(m.compute), 12) + pad(formatMinutes(m.staging), 12) + pad(formatMinutes(m.debug), 12) +
           pad(formatMinutes(m.idle), 12) + formatRatio(row.ledger.ratio) + "   (life " + std::to_string(n) + ")\n";
  }
  const auto& t = ledger.totals;
  out += pad("total", 30) + pad(formatMinutes(t.minutes.billed), 12) + pad(formatUsd(t.usd.billed), 10) +
         pad(formatMinutes(t.minutes.compute), 12) + pad(formatMinutes(t.minutes.staging), 12) +
         pad(formatMinutes(t.minutes.debug), 12) + pad(formatMinutes(t.minutes.idle), 12) + formatRatio(t.ratio) + "\n";
  out += "GPU rental " + formatUsd(t.usd.billed) + " (compute " + formatUsd(t.usd.compute) + ", staging " +
         formatUsd(t.usd.staging) + ", debug " + formatUsd(t.usd.debug) + ", idle " + formatUsd(t.usd.idle) +
         "); other spend " + formatUsd(t.otherUsd) + "; credits " + formatUsd(t.creditUsd) + "\n";
  bool header = false;
  for (const auto& row : ledger.lives)
    for (const auto& tr : row.life.transfers) {
      if (!header) out += "\ntransfers:\n";
      header = true;
      const std::string what = redactor ? redactor->text(tr.what) : tr.what;
      out += "  " + pad(label(row.life.box), 8) + pad(std::string(toString(tr.direction)), 6) +
             pad(formatBytes(tr.bytes), 12) + pad(formatRate(tr.mbPerSecond()), 14) + what + "\n";
    }
  if (std::any_of(ledger.lives.begin(), ledger.lives.end(), [](const LifeRow& r) { return r.life.alive(); }))
    out += "\n* alive: counted up to now\n";
  return out;
}

}  // namespace crosslab::ledger
