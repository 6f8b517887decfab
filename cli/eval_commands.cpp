// crosslab-cli eval check | agreement | export: the instruments that read files and the
// lab (generate and judge, which call models, are in eval_model_commands.cpp).
#include <nlohmann/json.hpp>

#include <iomanip>
#include <map>
#include <set>
#include <ostream>
#include <sstream>

#include "cli/command.h"
#include "core/eval/eval_store.h"
#include "core/eval/instrument_table.h"
#include "core/eval/output_check.h"

namespace crosslab::cli {
namespace {

using nlohmann::json;

void printSummary(const eval::CheckReport& r, std::ostream& os) {
  os << "eval " << r.evalSha256 << "\n";
  os << std::left << std::setw(28) << "model" << std::setw(12) << "json valid" << std::setw(8) << "fenced" << std::setw(8)
     << "quotes" << std::setw(7) << "exact" << std::setw(7) << "fuzzy" << std::setw(12) << "fabricated" << std::setw(9)
     << "invalid" << "fidelity\n";
  for (const auto& name : r.models) {
    const auto& m = r.summary.at(name);
    os << std::setw(28) << name << std::setw(12) << (std::to_string(m.jsonValid) + "/" + std::to_string(m.samples))
       << std::setw(8) << m.jsonFenced << std::setw(8) << m.quotes << std::setw(7) << m.exact << std::setw(7) << m.fuzzy
       << std::setw(12) << m.fabricated << std::setw(9) << m.invalid << m.fidelityLine() << "\n";
  }
  os << eval::QuoteChecker::kExactRule << "\n" << eval::QuoteChecker::kFuzzyRule << "\n";
}

void printDetail(const eval::CheckReport& r, std::ostream& os) {
  for (const auto& s : r.samples) {
    os << "\n" << s.record->id << "  " << s.record->model << "  format " << eval::formatKindName(s.format.kind);
    if (!s.format.parsed()) os << " (" << s.format.error << ")";
    os << "\n";
    for (const auto& q : s.quotes) {
      os << "  " << std::setw(11) << eval::quoteKindName(q.match.kind);
      if (q.match.context >= 0) os << "ctx " << q.match.context << " [" << q.match.charBegin << "," << q.match.charEnd << ") ";
      os << json(q.quote).dump();
      if (const std::string note = eval::quoteMatchNote(q.match); !note.empty()) os << "  (" << note << ")";
      os << "\n";
    }
  }
}

int evalCheck(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const auto evalSet = eval::loadEvalSet(args.required("--eval"));
  const std::string outputsPath = args.required("--outputs");
  const auto outputs = eval::loadOutputs(outputsPath);
  const auto report = eval::checkOutputs(evalSet, outputs);
  if (auto labDir = args.value("--lab")) {
    auto lab = store::LabStore::open(*labDir);
    eval::EvalStore es(lab);
    eval::recordCheck(es, report, outputsPath);
  }
  if (args.has("--json")) {
    ctx.out << eval::reportJson(report, args.has("--detail")).dump() << "\n";
    return 0;
  }
  printSummary(report, ctx.out);
  if (args.has("--detail")) printDetail(report, ctx.out);
  return 0;
}

int evalAgreement(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = store::LabStore::open(args.required("--lab"));
  eval::EvalStore es(lab);
  eval::InstrumentTable table;
  if (auto e = args.value("--eval")) {  // the eval set at hand: format and quotes checked afresh, with the breakdown
    const auto set = eval::loadEvalSet(*e);
    std::vector<eval::OutputRecord> records;
    std::vector<std::int64_t> ids;
    es.outputsFor(set, records, ids);
    table = eval::checkedInstrumentTable(eval::checkOutputs(set, records), ids, es.currentLabels(), es.publishedScores());
  } else {
    table = eval::buildInstrumentTable(es);
  }
  if (args.has("--json")) ctx.out << eval::instrumentTableJson(table).dump() << "\n";
  else ctx.out << eval::instrumentTableText(table);
  return 0;
}

std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string exportCsv(const std::vector<eval::StoredSample>& samples,
                      std::map<std::int64_t, std::map<std::string, eval::StoredVerdict>>& verdicts) {
  std::set<std::string> instruments;
  for (const auto& [id, byName] : verdicts)
    for (const auto& [name, v] : byName) instruments.insert(name);
  std::ostringstream os;
  os << "sample_id,eval_sha256,question_id,model";
  for (const auto& i : instruments) os << "," << csvField(i);
  os << ",output\n";
  for (const auto& s : samples) {
    os << s.id << "," << s.evalSha256 << "," << csvField(s.questionId) << "," << csvField(s.model);
    for (const auto& i : instruments) {
      auto& byName = verdicts[s.id];
      os << "," << (byName.count(i) ? csvField(byName[i].verdict) : "");
    }
    os << "," << csvField(s.output) << "\n";
  }
  return os.str();
}

json verdictJson(const eval::StoredVerdict& v) {
  json detail = v.detailJson.empty() ? json() : json::parse(v.detailJson, nullptr, false);
  return {{"verdict", v.verdict}, {"score", v.score ? json(*v.score) : json()}, {"detail", detail}, {"at", v.at}};
}

std::string exportJson(const std::vector<eval::StoredSample>& samples,
                       std::map<std::int64_t, std::map<std::string, eval::StoredVerdict>>& verdicts) {
  json out = json::array();
  for (const auto& s : samples) {
    json v = json::object();
    for (const auto& [name, verdict] : verdicts[s.id]) v[name] = verdictJson(verdict);
    out.push_back({{"sample_id", s.id}, {"eval_sha256", s.evalSha256}, {"id", s.questionId}, {"model", s.model},
                   {"output", s.output}, {"source", s.source}, {"verdicts", v}});
  }
  return out.dump(2) + "\n";
}

// DPO pairs (prompt, chosen, rejected) from pairwise verdicts with a winner.
std::string exportDpo(const Args& args, const std::vector<eval::StoredSample>& samples,
                      std::map<std::int64_t, std::map<std::string, eval::StoredVerdict>>& verdicts) {
  auto evalPath = args.value("--eval");
  if (!evalPath) throw UsageError("--format dpo needs --eval FILE (the prompts)");
  const auto evalSet = eval::loadEvalSet(*evalPath);
  std::map<std::int64_t, const eval::StoredSample*> byId;
  for (const auto& s : samples) byId[s.id] = &s;
  std::string out;
  for (const auto& s : samples) {
    if (s.evalSha256 != evalSet.sha256) continue;
    for (const auto& [name, v] : verdicts[s.id]) {
      if (!eval::isPairInstrument(name) || (v.verdict != "x" && v.verdict != "y")) continue;
      const json detail = json::parse(v.detailJson, nullptr, false);
      if (detail.is_discarded() || !detail.contains("other") || !byId.count(detail["other"].get<std::int64_t>())) continue;
      const auto* other = byId[detail["other"].get<std::int64_t>()];
      const auto* q = evalSet.find(s.questionId);
      const bool xWins = v.verdict == "x";
      out += json{{"prompt", q ? q->question : s.questionId},
                  {"chosen", xWins ? s.output : other->output},
                  {"rejected", xWins ? other->output : s.output},
                  {"id", s.questionId},
                  {"source", name}}
                 .dump() +
             "\n";
    }
  }
  return out;
}

int evalExport(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const std::string format = args.required("--format");
  if (format != "csv" && format != "json" && format != "dpo") throw UsageError("--format must be csv, json or dpo");
  auto lab = store::LabStore::open(args.required("--lab"));
  eval::EvalStore es(lab);
  const auto samples = es.samples();
  auto verdicts = es.currentVerdicts();
  const std::string text = format == "csv"    ? exportCsv(samples, verdicts)
                           : format == "json" ? exportJson(samples, verdicts)
                                              : exportDpo(args, samples, verdicts);
  if (auto out = args.value("--out")) {
    eval::writeFileAtomic(*out, text);
    ctx.err << "wrote " << *out << "\n";
  } else {
    ctx.out << text;
  }
  return 0;
}

}  // namespace

void addEvalCommands(std::vector<Command>& commands) {
  commands.push_back({"eval check", "--eval FILE --outputs FILE [--json] [--detail] [--lab LAB]",
                      "format + quote fidelity per model (mechanical instruments)",
                      {{"--eval", true, "eval set, JSON Lines {id, question, contexts}", true},
                       {"--outputs", true, "outputs, JSON Lines {id, model, output}", true},
                       {"--json", false, "print a JSON object"},
                       {"--detail", false, "add per-sample results with matched spans"},
                       {"--lab", true, "also store the samples and their format/quotes verdicts in this lab"}},
                      evalCheck});
  commands.push_back({"eval agreement", "--lab LAB [--eval FILE] [--json]",
                      "instruments side by side per model, Cohen's kappa, calibration",
                      {{"--lab", true, "the lab", true},
                       {"--eval", true, "only the samples of this eval set; format and quotes checked afresh, with "
                                        "the strict/fenced/invalid and exact/fuzzy/fabricated breakdown"},
                       {"--json", false, "print a JSON object"}},
                      evalAgreement});
  commands.push_back({"eval export", "--lab LAB --format csv|json|dpo [--eval FILE] [--out FILE]",
                      "export samples and verdicts (CSV, JSON) or DPO pairs from pairwise verdicts",
                      {{"--lab", true, "the lab", true},
                       {"--format", true, "csv, json or dpo", true},
                       {"--eval", true, "eval set (dpo: the prompts)"},
                       {"--out", true, "write here (atomically) instead of stdout"}},
                      evalExport});
}

}  // namespace crosslab::cli
