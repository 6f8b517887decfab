#include "widgets/review_text.h"

#include <nlohmann/json.hpp>

namespace crosslab::widgets {
namespace {

// UTF-16 length of the first `bytes` bytes of UTF-8 `s`.
int utf16Length(const std::string& s, size_t bytes) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(std::min(bytes, s.size()))).size();
}

// The output's JSON body (fence stripped) pretty-printed, or nothing when it does not parse.
QString pretty(const eval::SampleCheck& s) {
  if (!s.format.parsed()) return {};
  std::string body = s.record->output;
  if (s.format.kind == eval::FormatKind::Fenced) {
    const auto open = body.find('\n'), close = body.rfind("```");
    body = body.substr(open + 1, close - open - 1);
  }
  const auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded()) return {};
  return QString::fromStdString(doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

// A text view lays out a whole paragraph before showing any of it, so a 64 KB context in
// one paragraph costs tens of ms per switch. Replacing a space with a newline every
// ~kLine characters keeps every offset the same and lets the view lay out only what shows.
constexpr int kLine = 400;

void breakLongLines(QString& text) {
  int run = 0;
  for (int i = 0; i < text.size(); ++i) {
    const QChar c = text[i];
    if (c == '\n') run = 0;
    else if (++run >= kLine && c == ' ') {
      text[i] = '\n';
      run = 0;
    }
  }
}

QString escaped(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

void appendTokens(QString& html, const std::vector<eval::DiffToken>& tokens, const QString& sep) {
  for (const auto& t : tokens) {
    if (t.op == eval::DiffToken::Same) html += escaped(t.text);
    else if (t.op == eval::DiffToken::Removed)
      html += "<span style='color:#d03a2f;text-decoration:line-through'>" + escaped(t.text) + "</span>";
    else html += "<span style='color:#2ea043;font-weight:bold'>" + escaped(t.text) + "</span>";
    html += sep;
  }
}

}  // namespace

ContextsText contextsText(const eval::EvalQuestion& q) {
  ContextsText v;
  for (size_t i = 0; i < q.contexts.size(); ++i) {
    v.text += QString("[%1]\n").arg(i + 1);
    v.contextStart.push_back(v.text.size());
    v.contexts.push_back(QString::fromStdString(q.contexts[i]));
    v.text += v.contexts.back();
    v.text += "\n\n";
  }
  breakLongLines(v.text);
  return v;
}

QVector<Highlight> contextHighlights(const ContextsText& view, const eval::EvalQuestion& q,
                                     const eval::SampleCheck& sample) {
  QVector<Highlight> out;
  for (int i = 0; i < static_cast<int>(sample.quotes.size()); ++i) {
    const auto& m = sample.quotes[i].match;
    if (m.context < 0 || m.context >= view.contexts.size()) continue;
    const std::string& utf8 = q.contexts[static_cast<size_t>(m.context)];
    const int start = utf16Length(utf8, m.byteBegin);
    const int end = utf16Length(utf8, m.byteEnd);
    out.push_back({view.contextStart[m.context] + start, end - start, m.kind, i});
  }
  return out;
}

OutputText outputText(const eval::SampleCheck& s) {
  OutputText v;
  v.text = pretty(s);
  if (v.text.isEmpty()) v.text = QString::fromStdString(s.record->output);
  int from = 0;
  for (int i = 0; i < static_cast<int>(s.quotes.size()); ++i) {
    // In pretty JSON a quote appears as its JSON string literal.
    const QString needle = QString::fromStdString(nlohmann::json(s.quotes[i].quote).dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace));
    int at = v.text.indexOf(needle, from);
    if (at < 0) at = v.text.indexOf(needle);
    if (at < 0) continue;
    v.quotes.push_back({at + 1, static_cast<int>(needle.size()) - 2, s.quotes[i].match.kind, i});
    from = at + static_cast<int>(needle.size());
  }
  return v;
}

QString diffHtml(const eval::OutputDiff& d) {
  QString html;
  if (!d.json) {
    appendTokens(html, d.words, " ");
    return html;
  }
  html += "<b>answer:</b> ";
  appendTokens(html, d.answer, " ");
  html += "<br><b>evidence:</b><br>";
  appendTokens(html, d.evidence, "<br>");
  return html;
}

}  // namespace crosslab::widgets
