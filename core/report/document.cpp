#include "core/report/document.h"

#include <map>

#include "core/report/redactor.h"

namespace crosslab::report {
namespace {

std::string mdCell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += "<br>";
    else out += c;
  }
  return out;
}

std::string htmlText(const std::string& s) {
  std::string out = xmlEscape(s);
  for (size_t pos; (pos = out.find('\n')) != std::string::npos;) out.replace(pos, 1, "<br>");
  return out;
}

std::string anchor(const std::string& key) { return "ref-" + key; }

}  // namespace

void Document::heading(const std::string& text, int level) {
  Block b;
  b.kind = Block::Kind::Heading;
  b.level = level;
  b.text = text;
  blocks.push_back(std::move(b));
}

void Document::paragraph(const std::string& text) {
  Block b;
  b.kind = Block::Kind::Paragraph;
  b.text = text;
  blocks.push_back(std::move(b));
}

void Document::list(std::vector<std::string> items) {
  Block b;
  b.kind = Block::Kind::List;
  b.items = std::move(items);
  blocks.push_back(std::move(b));
}

void Document::table(Table t) {
  t.refs.resize(t.rows.size());
  Block b;
  b.kind = Block::Kind::Table;
  b.table = std::move(t);
  blocks.push_back(std::move(b));
}

void Document::chart(ChartSpec spec, const std::string& file) {
  Block b;
  b.kind = Block::Kind::Chart;
  b.chart = std::move(spec);
  b.chartFile = file;
  blocks.push_back(std::move(b));
}

std::string Document::cite(const std::string& prefix, const std::string& what, const std::string& rows) {
  int n = 1;
  for (const auto& e : appendix)
    if (e.key.rfind(prefix, 0) == 0) ++n;
  const std::string key = prefix + std::to_string(n);
  appendix.push_back({key, what, rows});
  return key;
}

void redact(Document& doc, const Redactor& r) {
  doc.title = r.text(doc.title);
  for (auto& b : doc.blocks) {
    b.text = r.text(b.text);
    for (auto& i : b.items) i = r.text(i);
    for (auto& h : b.table.header) h = r.text(h);
    for (auto& row : b.table.rows)
      for (auto& c : row) c = r.text(c);
    b.chart.title = r.text(b.chart.title);
    for (auto& s : b.chart.series) s.name = r.text(s.name);
  }
  for (auto& e : doc.appendix) {
    e.what = r.text(e.what);
    e.rows = r.text(e.rows);
  }
}

std::string renderMarkdown(const Document& doc) {
  std::string md = "# " + doc.title + "\n";
  for (const auto& b : doc.blocks) {
    switch (b.kind) {
      case Block::Kind::Heading:
        md += "\n" + std::string(static_cast<size_t>(b.level), '#') + " " + b.text + "\n";
        break;
      case Block::Kind::Paragraph:
        md += "\n" + b.text + "\n";
        break;
      case Block::Kind::List:
        md += "\n";
        for (const auto& i : b.items) md += "- " + i + "\n";
        break;
      case Block::Kind::Chart:
        md += "\n![" + b.chart.title + "](" + b.chartFile + ")\n";
        break;
      case Block::Kind::Table: {
        const auto& t = b.table;
        bool refs = false;
        for (const auto& r : t.refs) refs = refs || !r.empty();
        md += "\n|";
        for (const auto& h : t.header) md += " " + mdCell(h) + " |";
        if (refs) md += " rows |";
        md += "\n|";
        for (size_t i = 0; i < t.header.size() + (refs ? 1 : 0); ++i) md += " --- |";
        md += "\n";
        for (size_t i = 0; i < t.rows.size(); ++i) {
          md += "|";
          for (const auto& c : t.rows[i]) md += " " + mdCell(c) + " |";
          if (refs) md += " " + (t.refs[i].empty() ? std::string() : "[" + t.refs[i] + "](#" + anchor(t.refs[i]) + ")") + " |";
          md += "\n";
        }
        break;
      }
    }
  }
  if (!doc.appendix.empty()) {
    md += "\n## Appendix: where every number comes from\n\n| key | what | rows |\n| --- | --- | --- |\n";
    for (const auto& e : doc.appendix)
      md += "| <a id=\"" + anchor(e.key) + "\"></a>" + e.key + " | " + mdCell(e.what) + " | " + mdCell(e.rows) + " |\n";
  }
  return md;
}

std::string renderHtml(const Document& doc) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      xmlEscape(doc.title) +
      "</title>\n<style>\n"
      "body{font-family:'DejaVu Sans',sans-serif;font-size:14px;color:#222;max-width:1100px;margin:24px auto;"
      "padding:0 16px;line-height:1.45}\n"
      "h1{font-size:24px}h2{font-size:19px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}"
      "h3{font-size:16px}\n"
      "table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}"
      "th,td{border:1px solid #d0d0d0;padding:4px 8px;text-align:left;vertical-align:top}"
      "th{background:#f3f5f8}tr:nth-child(even) td{background:#fafafa}\n"
      "td.ref a{color:#2f6fde;text-decoration:none}svg.chart{display:block;margin:8px 0 20px;max-width:100%;"
      "height:auto;border:1px solid #eee}\n"
      "</style></head>\n<body>\n<h1>" +
      xmlEscape(doc.title) + "</h1>\n";
  for (const auto& b : doc.blocks) {
    switch (b.kind) {
      case Block::Kind::Heading: {
        const std::string tag = "h" + std::to_string(b.level);
        h += "<" + tag + ">" + htmlText(b.text) + "</" + tag + ">\n";
        break;
      }
      case Block::Kind::Paragraph:
        h += "<p>" + htmlText(b.text) + "</p>\n";
        break;
      case Block::Kind::List:
        h += "<ul>\n";
        for (const auto& i : b.items) h += "<li>" + htmlText(i) + "</li>\n";
        h += "</ul>\n";
        break;
      case Block::Kind::Chart:
        h += renderSvgChart(b.chart) + "\n";
        break;
      case Block::Kind::Table: {
        const auto& t = b.table;
        bool refs = false;
        for (const auto& r : t.refs) refs = refs || !r.empty();
        h += "<table><thead><tr>";
        for (const auto& c : t.header) h += "<th>" + htmlText(c) + "</th>";
        if (refs) h += "<th>rows</th>";
        h += "</tr></thead><tbody>\n";
        for (size_t i = 0; i < t.rows.size(); ++i) {
          h += "<tr>";
          for (const auto& c : t.rows[i]) h += "<td>" + htmlText(c) + "</td>";
          if (refs)
            h += "<td class=\"ref\">" +
                 (t.refs[i].empty() ? std::string() : "<a href=\"#" + anchor(t.refs[i]) + "\">" + t.refs[i] + "</a>") +
                 "</td>";
          h += "</tr>\n";
        }
        h += "</tbody></table>\n";
        break;
      }
    }
  }
  if (!doc.appendix.empty()) {
    h += "<h2>Appendix: where every number comes from</h2>\n<table><thead><tr><th>key</th><th>what</th><th>rows</th>"
         "</tr></thead><tbody>\n";
    for (const auto& e : doc.appendix)
      h += "<tr id=\"" + anchor(e.key) + "\"><td>" + e.key + "</td><td>" + htmlText(e.what) + "</td><td>" +
           htmlText(e.rows) + "</td></tr>\n";
    h += "</tbody></table>\n";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace crosslab::report
