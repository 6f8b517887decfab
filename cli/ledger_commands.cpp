// crosslab-cli ledger …, friction …, report: the lab's deliverable — the cost ledger per
// box life (import/export as JSON Lines), the friction log, and the report that
// regenerates the lab's tables from the store.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/venue_support.h"
#include "core/ledger/friction_log.h"
#include "core/ledger/lab_ledger.h"
#include "core/ledger/ledger_text.h"
#include "core/ledger/life_jsonl.h"
#include "core/ledger/life_recorder.h"
#include "core/report/redactor.h"
#include "core/report/report_builder.h"
#include "core/venues/meter.h"

namespace fs = std::filesystem;

namespace crosslab::backends {
namespace {

using cli::Args;
using cli::Context;
using ledger::FrictionCategory;

const cli::OptionSpec kLab{"--lab", true, "the lab (default $CROSSLAB_HOME/home, where venue commands record boxes)"};
const cli::OptionSpec kJson{"--json", false, "print JSON"};
const cli::OptionSpec kNoRedact{"--no-redact", false, "keep box names, hosts, user names and paths (never secrets)"};

report::Redactor redactorFor(store::LabStore& lab, const Args& args) {
  return report::Redactor::fromLab(lab, secretGuard(), !args.has("--no-redact"));
}

int ledgerShow(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  const auto l = ledger::readLedger(lab, ledger::epochNow());
  const auto r = redactorFor(lab, args);
  const std::string text = args.has("--json") ? ledger::ledgerJson(l, &r) : ledger::ledgerTable(l, &r);
  r.guardOutput(text, "the ledger");
  ctx.out << text;
  return 0;
}

int ledgerImport(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const std::string file = args.positional(0, "FILE");
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  auto lab = openVenueLab(args);
  try {
    const auto lives = ledger::parseLivesJsonl(in);
    const auto n = ledger::importLives(lab, lives);
    ctx.out << "imported " << n << " box " << (n == 1 ? "life" : "lives") << " from " << file << "\n";
  } catch (const ledger::ImportError& e) {
    throw std::runtime_error(file + ": " + e.what() + "; nothing was recorded");
  }
  return 0;
}

int ledgerExport(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  const auto r = redactorFor(lab, args);
  const std::string text = ledger::exportLivesJsonl(ledger::readLives(lab), &r);
  r.guardOutput(text, "the export");
  if (auto out = args.value("--out")) {
    const fs::path tmp = *out + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!(f << text)) throw std::runtime_error("cannot write " + tmp.string());
    }
    fs::rename(tmp, *out);
    ctx.err << "wrote " << *out << "\n";
  } else {
    ctx.out << text;
  }
  return 0;
}

double usdArgument(const Args& args) {
  args.expectPositionals(1, 1);
  const std::string text = args.positional(0, "USD");
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw cli::UsageError("USD must be a number of dollars, zero or more, not '" + text + "'");
}

int ledgerSpend(const Args& args, Context& ctx) {
  const double usd = usdArgument(args);
  const std::string kind = args.value("--kind").value_or("api");
  if (kind != "api" && kind != "other") throw cli::UsageError("--kind is api or other");
  auto lab = openVenueLab(args);
  const auto id = ledger::requestAddOtherSpend(lab, kind, usd, args.value("--note").value_or(""),
                                               args.value("--at").value_or(""));
  ctx.out << "recorded " << ledger::formatUsd(usd) << " of " << kind << " spend (ledger id " << id << ")\n";
  return 0;
}

int ledgerCredit(const Args& args, Context& ctx) {
  const double usd = usdArgument(args);
  auto lab = openVenueLab(args);
  const auto id = ledger::requestAddCredit(lab, usd, args.value("--note").value_or(""), args.value("--at").value_or(""));
  ctx.out << "recorded a credit of " << ledger::formatUsd(usd) << " (credit id " << id << ")\n";
  return 0;
}

// --- friction -----------------------------------------------------------------------

FrictionCategory categoryOf(const std::string& text) {
  if (auto c = ledger::frictionCategoryFrom(text)) return *c;
  throw cli::UsageError("--category is one of venue_hygiene, stack_lag, own_error, hardware, other, not '" + text + "'");
}

std::optional<double> optionalNumber(const Args& args, const std::string& name) {
  if (!args.has(name)) return std::nullopt;
  const double v = args.number(name, 0);
  if (v < 0) throw cli::UsageError(name + " must be zero or more");
  return v;
}

bool yesNo(const std::string& text, const std::string& name) {
  if (text == "yes" || text == "true" || text == "1") return true;
  if (text == "no" || text == "false" || text == "0") return false;
  throw cli::UsageError(name + " is yes or no, not '" + text + "'");
}

std::int64_t runIdOf(store::LabStore& lab, const std::string& text) {
  auto st = lab.db().prepare("SELECT id FROM runs WHERE CAST(id AS TEXT) = ? OR name = ? ORDER BY id DESC LIMIT 1");
  st.bind(1, text).bind(2, text);
  if (!st.step()) throw std::runtime_error("no run '" + text + "' in the lab");
  return st.int64(0);
}

std::int64_t boxIdOf(store::LabStore& lab, const std::string& text) {
  auto st = lab.db().prepare("SELECT id FROM boxes WHERE name = ? OR CAST(id AS TEXT) = ? ORDER BY id DESC LIMIT 1");
  st.bind(1, text).bind(2, text);
  if (!st.step()) throw std::runtime_error("no box '" + text + "' in the lab");
  return st.int64(0);
}

nlohmann::json entryJson(const ledger::FrictionEntry& e, const report::Redactor& r) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"id", e.id},
          {"at", e.at},
          {"title", r.text(e.title)},
          {"category", ledger::toKey(e.category)},
          {"minutes", opt(e.minutes)},
          {"usd", opt(e.usd)},
          {"box", e.box.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.boxLabel(e.box))},
          {"run", e.run.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.text(e.run))},
          {"cause", r.text(e.cause)},
          {"fix", r.text(e.fix)},
          {"ecosystem_specific", e.ecosystemSpecific},
          {"origin", e.origin}};
}

int frictionAdd(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  ledger::FrictionLog log(lab);
  ledger::FrictionEntry e;
  if (auto run = args.value("--from-run")) {
    auto offer = log.suggestFromRun(runIdOf(lab, *run));
    if (!offer) throw std::runtime_error("run '" + *run + "' did not fail or stall: nothing to pre-fill");
    e = *offer;
  } else if (auto box = args.value("--from-box")) {
    auto offer = log.suggestFromBoxLife(boxIdOf(lab, *box));
    if (!offer) throw std::runtime_error("box '" + *box + "' has no ended life with debug time");
    e = *offer;
  }
  if (auto v = args.value("--title")) e.title = *v;
  if (e.title.empty()) throw cli::UsageError("friction add needs --title (or --from-run / --from-box)");
  if (auto v = args.value("--category")) e.category = categoryOf(*v);
  if (auto v = optionalNumber(args, "--minutes")) e.minutes = v;
  if (auto v = optionalNumber(args, "--usd")) e.usd = v;
  if (auto v = args.value("--box")) e.boxId = boxIdOf(lab, *v);
  if (auto v = args.value("--run")) e.runId = runIdOf(lab, *v);
  if (auto v = args.value("--cause")) e.cause = *v;
  if (auto v = args.value("--fix")) e.fix = *v;
  if (auto v = args.value("--at")) e.at = *v;
  if (args.has("--ecosystem-specific")) e.ecosystemSpecific = true;
  const auto id = log.requestAdd(e);
  ctx.out << "added friction entry " << id << ": " << e.title << "\n";
  return 0;
}

int frictionList(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  ledger::FrictionLog log(lab);
  const auto r = redactorFor(lab, args);
  const auto entries = args.has("--open") ? log.openSuggestions() : log.list();
  std::string text;
  if (args.has("--json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : entries) arr.push_back(entryJson(e, r));
    text = arr.dump(2) + "\n";
  } else {
    for (const auto& e : entries) {
      std::ostringstream line;
      line << (e.id ? std::to_string(e.id) : std::string("offer")) << "  " << (e.at.empty() ? "-" : e.at) << "  ["
           << ledger::toLabel(e.category) << "]  " << r.text(e.title);
      if (e.minutes) line << "  " << ledger::formatMinutes(*e.minutes);
      if (e.usd) line << "  " << ledger::formatUsd(*e.usd);
      if (e.ecosystemSpecific) line << "  ecosystem-specific";
      if (!e.cause.empty()) line << "\n      cause: " << r.text(e.cause);
      if (!e.fix.empty()) line << "\n      fix: " << r.text(e.fix);
      if (!e.origin.empty() && !e.id) line << "\n      add with: crosslab-cli friction add --from-"
                                           << (e.runId ? "run " + std::to_string(*e.runId)
                                                       : "box " + std::to_string(e.boxId.value_or(0)));
      text += line.str() + "\n";
    }
    if (!args.has("--open"))
      text += std::to_string(entries.size()) + " entries; " + std::to_string(log.ecosystemSpecificCount()) +
              " specific to a venue's ecosystem\n";
  }
  r.guardOutput(text, "the friction log");
  ctx.out << text;
  return 0;
}

int frictionEdit(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const std::string idText = args.positional(0, "ID");
  std::int64_t id = 0;
  try {
    id = std::stoll(idText);
  } catch (const std::exception&) {
    throw cli::UsageError("ID must be a friction entry's number, not '" + idText + "'");
  }
  ledger::FrictionEdit edit;
  if (auto v = args.value("--title")) edit.title = *v;
  if (auto v = args.value("--cause")) edit.cause = *v;
  if (auto v = args.value("--fix")) edit.fix = *v;
  if (auto v = args.value("--at")) edit.at = *v;
  if (auto v = args.value("--category")) edit.category = categoryOf(*v);
  if (args.has("--minutes")) edit.minutes = optionalNumber(args, "--minutes");
  if (args.has("--usd")) edit.usd = optionalNumber(args, "--usd");
  if (auto v = args.value("--ecosystem-specific")) edit.ecosystemSpecific = yesNo(*v, "--ecosystem-specific");
  auto lab = openVenueLab(args);
  ledger::FrictionLog(lab).requestEdit(id, edit);
  ctx.out << "edited friction entry " << id << "\n";
  return 0;
}

// --- report -------------------------------------------------------------------------

int reportCommand(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const auto out = args.value("--out");
  if (!out) throw cli::UsageError("report needs --out DIR");
  std::vector<report::Format> formats;
  try {
    formats = report::parseFormats(args.value("--format").value_or("md,html"));
  } catch (const std::invalid_argument& e) {
    throw cli::UsageError(e.what());
  }
  auto lab = openVenueLab(args);
  report::ReportOptions options;
  options.redact = !args.has("--no-redact");
  const auto files = report::writeReport(lab, *out, formats, secretGuard(), options);
  for (const auto& f : files)
    if (f.filename() == "report.md" || f.filename() == "report.html") ctx.out << f.string() << "\n";
  return 0;
}

}  // namespace

void addLedgerCommands(std::vector<cli::Command>& commands) {
  const cli::OptionSpec at{"--at", true, "when (ISO-8601 UTC; default now)"};
  const cli::OptionSpec note{"--note", true, "what it was"};
  commands.push_back({"ledger", "[--lab LAB] [--json] [--no-redact]",
                      "cost per box life: compute, staging, debug and idle minutes and USD; totals",
                      {kLab, kJson, kNoRedact},
                      ledgerShow});
  commands.push_back({"ledger import", "FILE.jsonl [--lab LAB]",
                      "record box lives from JSON Lines (one life a line); bad input records nothing",
                      {kLab},
                      ledgerImport});
  commands.push_back({"ledger export", "[--lab LAB] [--out FILE] [--no-redact]",
                      "write the lab's box lives as JSON Lines (the import format)",
                      {kLab, {"--out", true, "file to write (default stdout)"}, kNoRedact},
                      ledgerExport});
  commands.push_back({"ledger spend", "USD [--kind api|other] [--note TEXT] [--at ISO] [--lab LAB]",
                      "record spend outside any box life (judge and embedding APIs …)",
                      {kLab, {"--kind", true, "api (default) or other"}, note, at},
                      ledgerSpend});
  commands.push_back({"ledger credit", "USD [--note TEXT] [--at ISO] [--lab LAB]",
                      "record a credit (a vendor's comped credit)",
                      {kLab, note, at},
                      ledgerCredit});
  const std::vector<cli::OptionSpec> fields = {
      {"--title", true, "what happened"},
      {"--category", true, "venue_hygiene | stack_lag | own_error | hardware | other"},
      {"--minutes", true, "minutes lost"},
      {"--usd", true, "money lost (USD)"},
      {"--cause", true, "the reason"},
      {"--fix", true, "what fixed or sidestepped it"},
      at};
  auto addOpts = fields;
  addOpts.insert(addOpts.end(), {kLab,
                                 {"--box", true, "the box (name or id)"},
                                 {"--run", true, "the run (name or id)"},
                                 {"--ecosystem-specific", false, "specific to the venue's ecosystem (ROCm, CUDA, MLX …)"},
                                 {"--from-run", true, "pre-fill from a failed or stalled run (reason, dead minutes, cost)"},
                                 {"--from-box", true, "pre-fill from a box life that ended with debug time"}});
  commands.push_back({"friction add", "--title TEXT [--category C] [--minutes M] [--usd U] [--box B] [--run R] …",
                      "log friction: what went wrong, what it cost, whose fault",
                      addOpts,
                      frictionAdd});
  commands.push_back({"friction list", "[--lab LAB] [--json] [--open] [--no-redact]",
                      "the friction log (--open: failed runs and debug time not logged yet)",
                      {kLab, kJson, kNoRedact, {"--open", false, "offers not yet taken, pre-filled"}},
                      frictionList});
  auto editOpts = fields;
  editOpts.insert(editOpts.end(),
                  {kLab, {"--ecosystem-specific", true, "yes or no"}});
  commands.push_back({"friction edit", "ID [--title T] [--category C] [--minutes M] [--usd U] [--fix F] …",
                      "change a friction entry (all or nothing)",
                      editOpts,
                      frictionEdit});
  commands.push_back({"report", "--out DIR [--lab LAB] [--format md,html] [--no-redact]",
                      "the lab's write-up from the store: tables, charts, ledger, friction, portability verdict",
                      {kLab, {"--out", true, "folder to write report.md / report.html into"},
                       {"--format", true, "md, html or md,html (default)"}, kNoRedact},
                      reportCommand});
}

}  // namespace crosslab::backends
