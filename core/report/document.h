#pragma once
// The report as a small document (headings, paragraphs, tables, charts, lists, and an
// appendix naming the rows behind every number), rendered to Markdown and to one
// self-contained HTML file. Redaction runs over the document before rendering and the
// secret guard over each rendered file.

#include <string>
#include <vector>

#include "core/report/svg_chart.h"

namespace crosslab::report {

class Redactor;

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Per row: the appendix key that names the rows it came from ("T2"), or empty.
  std::vector<std::string> refs;
};

struct Block {
  enum class Kind { Heading, Paragraph, Table, Chart, List };
  Kind kind = Kind::Paragraph;
  int level = 2;  // headings
  std::string text;
  Table table;
  ChartSpec chart;
  std::string chartFile;  // Markdown: the chart's SVG file, relative to the report ("charts/loss.svg")
  std::vector<std::string> items;
};

struct AppendixEntry {
  std::string key;   // "T2"
  std::string what;  // "training: demo-lora"
  std::string rows;  // "runs.id=3; metrics run_id=3 steps 1–111"
};

class Document {
 public:
  std::string title;
  std::vector<Block> blocks;
  std::vector<AppendixEntry> appendix;

  void heading(const std::string& text, int level = 2);
  void paragraph(const std::string& text);
  void list(std::vector<std::string> items);
  // Adds a table; rows' refs must match rows (or be empty).
  void table(Table t);
  void chart(ChartSpec spec, const std::string& file);
  // A new appendix key ("<prefix><n>") for `what`, backed by `rows`.
  std::string cite(const std::string& prefix, const std::string& what, const std::string& rows);
};

// Every human-readable string of the document through the redactor.
void redact(Document& doc, const Redactor& redactor);
std::string renderMarkdown(const Document& doc);
// One file: inline CSS and SVG, no script, a Content-Security-Policy that fetches nothing.
std::string renderHtml(const Document& doc);

}  // namespace crosslab::report
