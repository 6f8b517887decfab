#include "core/report/report_builder.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "core/ledger/life_recorder.h"
#include "core/report/redactor.h"
#include "core/report/report_sections.h"
#include "core/store/lab_store.h"

namespace fs = std::filesystem;

namespace crosslab::report {
namespace {

// temp file + rename: a reader never sees half a report.
void writeAtomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot move the report into place at " + path.string());
  }
}

}  // namespace

Document buildReport(store::LabStore& lab, const ReportOptions& options) {
  Document doc;
  const double now = options.now > 0 ? options.now : ledger::epochNow();
  const auto info = lab.info();
  doc.title = "Lab report: " + info.name;
  doc.paragraph("Generated " + ledger::isoUtc(now) + " from the lab's store alone (schema " +
                std::to_string(info.schemaVersion) + "). " +
                (options.redact ? "Hosts and IP addresses are replaced with labels (BOX-1, BOX-2 … in order of first "
                                  "provisioning); user names and key paths are dropped."
                                : "Not redacted: hosts, names and paths appear as recorded.") +
                " Every table row names, in its last column, the appendix entry that lists the rows it came from.");
  SectionContext ctx{lab, doc, now};
  addTraining(ctx);
  addServing(ctx);
  addQuality(ctx);
  addPortability(ctx);
  addLadder(ctx);
  addFriction(ctx);
  addLedger(ctx);
  return doc;
}

std::vector<Format> parseFormats(const std::string& list) {
  std::vector<Format> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string f = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (f == "md" || f == "markdown") out.push_back(Format::Markdown);
    else if (f == "html") out.push_back(Format::Html);
    else throw std::invalid_argument("unknown report format '" + f + "' (md, html)");
  }
  return out;
}

std::vector<fs::path> writeReport(store::LabStore& lab, const fs::path& dir, const std::vector<Format>& formats,
                                  const venues::SecretGuard& guard, const ReportOptions& options) {
  Document doc = buildReport(lab, options);
  const Redactor redactor = Redactor::fromLab(lab, guard, options.redact);
  redact(doc, redactor);
  // Render everything and check it before a single byte is written.
  std::vector<std::pair<fs::path, std::string>> files;
  for (const Format f : formats) {
    if (f == Format::Markdown) {
      files.emplace_back(dir / "report.md", renderMarkdown(doc));
      for (const auto& b : doc.blocks)
        if (b.kind == Block::Kind::Chart) files.emplace_back(dir / b.chartFile, renderSvgChart(b.chart));
    } else {
      files.emplace_back(dir / "report.html", renderHtml(doc));
    }
  }
  for (const auto& [path, text] : files) redactor.guardOutput(text, path.filename().string());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  std::vector<fs::path> written;
  for (const auto& [path, text] : files) {
    fs::create_directories(path.parent_path(), ec);
    writeAtomically(path, text);
    written.push_back(path);
  }
  return written;
}

}  // namespace crosslab::report
