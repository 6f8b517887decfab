// The availability ladder and timeline, the friction log and the cost ledger.
#include <algorithm>
#include <map>

#include "core/ledger/friction_log.h"
#include "core/ledger/lab_ledger.h"
#include "core/ledger/ledger_text.h"
#include "core/ledger/life_recorder.h"
#include "core/report/report_sections.h"
#include "core/store/lab_store.h"
#include "core/venues/venue_store.h"

namespace crosslab::report {
namespace {

std::string idList(const std::string& table, const std::vector<std::int64_t>& ids) {
  if (ids.empty()) return {};
  std::string s = table + ".id=";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

std::string duration(double seconds) {
  if (seconds >= 3600) return fixedText(seconds / 3600, 1) + " h";
  if (seconds >= 60) return fixedText(seconds / 60, 1) + " min";
  return fixedText(seconds, 1) + " s";
}

}  // namespace

void addLadder(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Availability ladder");
  venues::VenueStore vs(ctx.lab);
  const auto rungs = vs.venues();
  if (rungs.empty()) {
    doc.paragraph("No venues recorded.");
    return;
  }
  Table t;
  t.header = {"Venue", "Accelerator", "Availability", "$/h", "Quota", "Probed", "Notes"};
  for (const auto& v : rungs) {
    t.rows.push_back({v.name, v.accelerator, v.availability, v.pricePerHour ? "$" + fixedText(*v.pricePerHour, 2) : "",
                      v.quota, v.probedAt, v.notes});
    t.refs.push_back(doc.cite("L", "ladder: " + v.name, "venues.id=" + std::to_string(v.id)));
  }
  doc.table(std::move(t));
  doc.heading("Timeline", 3);
  bool any = false;
  for (const auto& v : rungs) {
    const auto milestones = vs.timeline(v.name);
    if (milestones.empty()) continue;
    any = true;
    Table m;
    m.header = {"Milestone (" + v.name + ")", "At (UTC)"};
    for (const auto& ms : milestones) m.rows.push_back({ms.name, ledger::isoUtc(ms.at)});
    m.refs.assign(m.rows.size(), doc.cite("L", "timeline: " + v.name, "timeline venue_id=" + std::to_string(v.id)));
    doc.table(std::move(m));
    const auto s = venues::summarizeTimeline(milestones);
    doc.paragraph(v.name + ": " + duration(s.elapsedSeconds) + " from first to last milestone; active time " +
                  duration(s.activeSeconds) + " (gaps of 30 minutes or more are the calendar, not work).");
  }
  if (!any) doc.paragraph("No timeline milestones recorded.");
}

void addFriction(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Friction log");
  ledger::FrictionLog log(ctx.lab);
  const auto entries = log.list();
  if (entries.empty()) {
    doc.paragraph("No friction recorded.");
    return;
  }
  Table t;
  t.header = {"#", "At (UTC)", "What", "Category", "Minutes lost", "Money lost", "Box / run", "Fix", "Ecosystem-specific"};
  int n = 0;
  double minutes = 0, usd = 0;
  for (const auto& e : entries) {
    std::string where = e.box;
    if (!e.run.empty()) where += (where.empty() ? "" : " / ") + e.run;
    t.rows.push_back({std::to_string(++n), e.at, e.title + (e.cause.empty() ? "" : " — " + e.cause),
                      std::string(ledger::toLabel(e.category)), e.minutes ? fixedText(*e.minutes, 0) : "",
                      e.usd ? "$" + fixedText(*e.usd, 2) : "", where, e.fix, e.ecosystemSpecific ? "yes" : "no"});
    t.refs.push_back(doc.cite("F", "friction: " + e.title, "friction.id=" + std::to_string(e.id)));
    minutes += e.minutes.value_or(0);
    usd += e.usd.value_or(0);
  }
  doc.table(std::move(t));
  const auto specific = log.ecosystemSpecificCount();
  doc.paragraph(std::to_string(entries.size()) + " entries, " + fixedText(minutes, 0) + " minutes and $" +
                fixedText(usd, 2) + " lost as logged. " +
                (specific == 0 ? "No entry is marked specific to a venue's ecosystem."
                               : std::to_string(specific) + " of " + std::to_string(entries.size()) +
                                     " entries are marked specific to a venue's ecosystem."));
}

void addLedger(SectionContext& ctx) {
  auto& doc = ctx.doc;
  doc.heading("Cost ledger");
  const auto ledger = ledger::readLedger(ctx.lab, ctx.now);
  if (ledger.lives.empty() && ledger.other.empty() && ledger.credits.empty()) {
    doc.paragraph("No box lives, other spend or credits recorded.");
    return;
  }
  Table t;
  t.header = {"Life",    "Hardware", "Provisioned (UTC)", "Billed",           "Cost", "Compute",
              "Staging", "Debug",    "Idle",              "Staging + debug", "Ratio"};
  std::map<std::string, int> lifeNo;
  std::vector<std::string> refs;
  for (const auto& row : ledger.lives) {
    const auto& l = row.life;
    const auto& u = row.ledger.usd;
    std::vector<std::int64_t> work, transfers;
    for (const auto& w : l.work) work.push_back(w.id);
    for (const auto& tr : l.transfers) transfers.push_back(tr.id);
    std::string rows = "boxes.id=" + std::to_string(l.boxId);
    if (!work.empty()) rows += "; " + idList("box_work", work);
    if (!transfers.empty()) rows += "; " + idList("box_transfers", transfers);
    const std::string name = l.box + ", life " + std::to_string(++lifeNo[l.box]) + (l.alive() ? " (alive)" : "");
    t.rows.push_back({name, (l.gpus > 1 ? std::to_string(l.gpus) + "x " : std::string()) + l.gpu + " @ $" +
                                fixedText(l.pricePerHour, 2) + "/h, " + std::to_string(l.minMinutes) + " min minimum",
                      ledger::isoUtc(l.provisioned), ledger::formatMinutes(row.ledger.minutes.billed),
                      ledger::formatUsd(u.billed), ledger::formatUsd(u.compute), ledger::formatUsd(u.staging),
                      ledger::formatUsd(u.debug), ledger::formatUsd(u.idle), ledger::formatUsd(u.staging + u.debug),
                      ledger::formatRatio(row.ledger.ratio)});
    refs.push_back(doc.cite("C", "ledger: " + name, rows));
  }
  const auto& tot = ledger.totals;
  t.rows.push_back({"Total", "", "", ledger::formatMinutes(tot.minutes.billed), ledger::formatUsd(tot.usd.billed),
                    ledger::formatUsd(tot.usd.compute), ledger::formatUsd(tot.usd.staging),
                    ledger::formatUsd(tot.usd.debug), ledger::formatUsd(tot.usd.idle),
                    ledger::formatUsd(tot.usd.staging + tot.usd.debug), ledger::formatRatio(tot.ratio)});
  refs.push_back("");
  t.refs = refs;
  doc.table(std::move(t));
  std::string totals = "GPU rental " + ledger::formatUsd(tot.usd.billed);
  if (tot.creditUsd > 0) totals += " (from " + ledger::formatUsd(tot.creditUsd) + " of credits)";
  totals += ", plus " + ledger::formatUsd(tot.otherUsd) + " of other spend (judge and embedding APIs and the like).";
  doc.paragraph(totals + " Compute is the time work that finished ran; debug is work that did not finish and the "
                "wait after it; staging is the rest before the last work (pulls, setup, waiting); idle is after "
                "the last work and the unused minimum. Ratio = (staging + debug) : compute.");
  if (!ledger.other.empty() || !ledger.credits.empty()) {
    Table o;
    o.header = {"At (UTC)", "Kind", "USD", "Note"};
    for (const auto& s : ledger.other) {
      o.rows.push_back({s.at, s.category == "api" ? "API spend" : "other spend", ledger::formatUsd(s.usd), s.note});
      o.refs.push_back(doc.cite("C", "other spend: " + s.note, "ledger.id=" + std::to_string(s.id)));
    }
    for (const auto& c : ledger.credits) {
      o.rows.push_back({c.at, "credit", ledger::formatUsd(c.usd), c.note});
      o.refs.push_back(doc.cite("C", "credit: " + c.note, "credits.id=" + std::to_string(c.id)));
    }
    doc.table(std::move(o));
  }
  Table tr;
  tr.header = {"Life", "Direction", "What", "Bytes", "Took", "Rate"};
  lifeNo.clear();
  for (const auto& row : ledger.lives) {
    const std::string name = row.life.box + ", life " + std::to_string(++lifeNo[row.life.box]);
    for (const auto& x : row.life.transfers) {
      tr.rows.push_back({name, std::string(ledger::toString(x.direction)), x.what, ledger::formatBytes(x.bytes),
                         duration(x.end - x.start), ledger::formatRate(x.mbPerSecond())});
      tr.refs.push_back(doc.cite("C", "transfer: " + x.what, "box_transfers.id=" + std::to_string(x.id)));
    }
  }
  if (!tr.rows.empty()) {
    doc.heading("Transfers", 3);
    doc.table(std::move(tr));
  }
  std::vector<std::string> forecasts;
  for (const auto& row : ledger.lives)
    if (row.life.alive())
      if (auto f = ledger::stagingForecastFor(ctx.lab, row.life.venue, row.life.pricePerHour); f && f->bytes > 0)
        forecasts.push_back(row.life.box + " (alive): the last life of " + row.life.venue + " moved " +
                            ledger::formatBytes(f->bytes) + " in " + ledger::formatMinutes(f->minutes) +
                            "; this life will likely repeat that staging, about " + ledger::formatUsd(f->usd) + ".");
  if (!forecasts.empty()) doc.list(forecasts);
}

}  // namespace crosslab::report
