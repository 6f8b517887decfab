// Mechanical instruments: quote fidelity (normal form, exact, 4-gram fuzzy, spans in the
// original), format parsing, the per-model summary and Cohen's kappa on known tables.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/eval/agreement.h"
#include "core/eval/format_checker.h"
#include "core/eval/output_check.h"
#include "core/eval/output_diff.h"
#include "core/eval/quote_checker.h"
#include "core/util/sha256.h"

using namespace crosslab::eval;
using crosslab::util::sha256File;
using crosslab::util::sha256Hex;

namespace {

const std::string kContext0 =
    "The  Mistral\tfine-tune ran for 111 steps on the MI300X box.\n\nIts loss fell from 2.1 to 0.9 "
    "and the “quality gate” was rebuilt — twice — before publication.";
const std::string kContext1 = "Café owners in Zürich reported that the espresso machine failed every Tuesday morning.";

std::string span(const std::string& text, const QuoteMatch& m) { return text.substr(m.byteBegin, m.byteEnd - m.byteBegin); }

}  // namespace

class TestQuoteChecker : public QObject {
  Q_OBJECT
 private slots:
  void normalFormFoldsCaseSpaceQuotesAndDashes() {
    const auto n = TextNormalizer::normalize("  A “Big”\u00a0 dash—here\r\n", true);
    QCOMPARE(QString::fromStdString(n.text), QString("a \"big\" dash-here"));
    QCOMPARE(n.origin.size(), n.text.size());
    // Each step can be left out: "exact" keeps letter case.
    QCOMPARE(QString::fromStdString(TextNormalizer::normalize("  A “Big”  dash", false, QuoteChecker::kExactSteps).text),
             QString("A \"Big\" dash"));
    QCOMPARE(QString::fromStdString(TextNormalizer::normalize(" A “Big” ", false, kFoldCase).text), QString::fromUtf8(" a “big” "));
    QCOMPARE(TextNormalizer::stepsNeeded("A  “b”", "a \"b\""), unsigned(kCollapseSpace | kFoldTypography | kFoldCase));
    QCOMPARE(TextNormalizer::stepsNeeded("same", "same"), 0u);
  }

  void nfcComposesCombiningMarks() {
    // "e" + U+0301 (combining acute) normalises to U+00E9, same as the precomposed form.
    QCOMPARE(TextNormalizer::normalize("Cafe\u0301", false).text, TextNormalizer::normalize("CAF\u00c9", false).text);
  }

  void exactMatchReportsSpanInOriginal() {
    std::vector<std::string> ctx{kContext0, kContext1};
    QuoteChecker qc(ctx);
    auto m = qc.check("Its loss fell from 2.1 to 0.9");
    QCOMPARE(m.kind, QuoteKind::Exact);
    QCOMPARE(m.context, 0);
    QCOMPARE(m.normalized, 0u);
    QCOMPARE(QString::fromStdString(quoteMatchNote(m)), QString("verbatim"));
    QCOMPARE(QString::fromStdString(span(kContext0, m)), QString("Its loss fell from 2.1 to 0.9"));
  }

  // The rule "exact" allows: whitespace runs, Unicode form and typographic quote marks and
  // dashes; each match says which of them it needed.
  void whitespaceAndQuoteStyleVariantsMatchExactly() {
    std::vector<std::string> ctx{kContext0};
    QuoteChecker qc(ctx);
    auto m = qc.check("The Mistral fine-tune   ran for 111 steps");
    QCOMPARE(m.kind, QuoteKind::Exact);
    QCOMPARE(m.normalized, unsigned(kCollapseSpace));
    QCOMPARE(QString::fromStdString(quoteMatchNote(m)), QString("whitespace"));
    QCOMPARE(QString::fromStdString(span(kContext0, m)), QString("The  Mistral\tfine-tune ran for 111 steps"));
    auto curly = qc.check("the \"quality gate\" was rebuilt - twice - before");
    QCOMPARE(curly.kind, QuoteKind::Exact);
    QCOMPARE(curly.normalized, unsigned(kFoldTypography));
    QCOMPARE(QString::fromStdString(quoteMatchNote(curly)), QString("quote marks/dashes"));
    QCOMPARE(QString::fromStdString(span(kContext0, curly)), QString::fromUtf8("the “quality gate” was rebuilt — twice — before"));
  }

  // Letter case is not something "exact" forgives: the same run with other case is fuzzy,
  // found at the same place, and says so.
  void caseDifferenceIsFuzzyNotExact() {
    std::vector<std::string> ctx{kContext0};
    QuoteChecker qc(ctx);
    auto m = qc.check("THE MISTRAL FINE-TUNE   ran for 111 steps");
    QCOMPARE(m.kind, QuoteKind::Fuzzy);
    QVERIFY(m.caseFolded);
    QCOMPARE(m.score, 1.0);
    QCOMPARE(m.normalized, unsigned(kCollapseSpace | kFoldCase));
    QCOMPARE(QString::fromStdString(quoteMatchNote(m)), QString("whitespace, letter case"));
    QCOMPARE(QString::fromStdString(span(kContext0, m)), QString("The  Mistral\tfine-tune ran for 111 steps"));
  }

  // Issue 11: a lower-cased quote with its sentence's period stripped was labelled exact.
  void lowerCasedQuoteWithPeriodStrippedIsNotExact() {
    const std::string c = "Nothing broke. The loss fell to 0.9 after three epochs.";
    std::vector<std::string> ctx{c};
    QuoteChecker qc(ctx);
    auto lowered = qc.check("the loss fell to 0.9 after three epochs");
    QCOMPARE(lowered.kind, QuoteKind::Fuzzy);
    QVERIFY(lowered.caseFolded);
    QCOMPARE(QString::fromStdString(quoteMatchNote(lowered)), QString("letter case"));
    // Leaving out the final period is choosing a shorter run of the same words: verbatim.
    auto verbatim = qc.check("The loss fell to 0.9 after three epochs");
    QCOMPARE(verbatim.kind, QuoteKind::Exact);
    QCOMPARE(QString::fromStdString(quoteMatchNote(verbatim)), QString("verbatim"));
    // A run that cuts a word is not a quote of it.
    QCOMPARE(qc.check("he loss fell").kind, QuoteKind::Fabricated);
    QCOMPARE(qc.check("loss fell to 0").kind, QuoteKind::Fabricated);
  }

  void scriptsWithoutSpacesMatchInsideRuns() {
    const std::string c = "\u6a21\u578b\u5728\u4e09\u4e2a\u5468\u671f\u540e\u6536\u655b";  // no spaces between words
    std::vector<std::string> ctx{c};
    QuoteChecker qc(ctx);
    QCOMPARE(qc.check("\u4e09\u4e2a\u5468\u671f").kind, QuoteKind::Exact);
  }

  void nonAsciiSpanUsesCodePointOffsets() {
    std::vector<std::string> ctx{kContext1};
    QuoteChecker qc(ctx);
    auto m = qc.check("owners in Zürich reported");
    QCOMPARE(m.kind, QuoteKind::Exact);
    QCOMPARE(QString::fromStdString(span(kContext1, m)), QString::fromUtf8("owners in Zürich reported"));
    // "Café " is 5 code points but 6 bytes.
    QCOMPARE(m.charBegin, size_t(5));
    QCOMPARE(m.byteBegin, size_t(6));
    QCOMPARE(m.charEnd - m.charBegin, size_t(25));
    auto upper = qc.check("owners in ZÜRICH reported");  // non-ASCII case folding finds the same span
    QCOMPARE(upper.kind, QuoteKind::Fuzzy);
    QCOMPARE(upper.byteBegin, m.byteBegin);
    QCOMPARE(upper.byteEnd, m.byteEnd);
    QCOMPARE(qc.check("rich reported that").kind, QuoteKind::Fabricated);  // "Zürich" cut after "Zü"
  }

  void decomposedQuoteMatchesPrecomposedContext() {
    std::vector<std::string> ctx{kContext1};
    QuoteChecker qc(ctx);
    auto m = qc.check("Cafe\u0301 owners");
    QCOMPARE(m.kind, QuoteKind::Exact);
    QCOMPARE(QString::fromStdString(quoteMatchNote(m)), QString("Unicode form"));
  }

  void oneWordChangedIsFuzzy() {
    const std::string c =
        "the committee approved the new budget for the regional hospital after a long debate about staffing levels "
        "and the cost of the new wing";
    std::vector<std::string> ctx{"unrelated text about something else entirely", c};
    QuoteChecker qc(ctx);
    // 22 words, one changed at the end: 18 of 19 distinct 4-grams survive (95%).
    auto m = qc.check("the committee approved the new budget for the regional hospital after a long debate about "
                      "staffing levels and the cost of the old wing");
    QCOMPARE(m.kind, QuoteKind::Fuzzy);
    QCOMPARE(m.context, 1);
    QVERIFY(m.score >= 0.8 && m.score < 1.0);
    QVERIFY(QString::fromStdString(span(c, m)).startsWith("the committee approved"));
    // A change in the middle of a short quote kills 4 of 5 grams: fabricated.
    auto bad = qc.check("approved the new plan for the regional hospital");
    QCOMPARE(bad.kind, QuoteKind::Fabricated);
    QCOMPARE(bad.context, -1);
  }

  void punctuationAtWordEdgesIsIgnoredByFuzzy() {
    const std::string c = "we measured, carefully, the throughput of every venue (twice) and kept the raw logs";
    std::vector<std::string> ctx{c};
    QuoteChecker qc(ctx);
    auto m = qc.check("we measured carefully the throughput of every venue twice and kept the raw logs");
    QCOMPARE(m.kind, QuoteKind::Fuzzy);
    QCOMPARE(m.score, 1.0);
    QVERIFY(!m.caseFolded);
    QCOMPARE(QString::fromStdString(quoteMatchNote(m)), QString("4-gram 100%"));
  }

  void shortQuotesMatchOnlyExactly() {
    std::vector<std::string> ctx{kContext0};
    QuoteChecker qc(ctx);
    QCOMPARE(qc.check("111 steps").kind, QuoteKind::Exact);
    QCOMPARE(qc.check("112 steps on").kind, QuoteKind::Fabricated);
  }

  void quotesGluedFromTwoContextsAreFabricated() {
    const std::string a = "alpha beta gamma delta epsilon zeta eta theta";
    const std::string b = "one two three four five six seven eight";
    std::vector<std::string> ctx{a, b};
    QuoteChecker qc(ctx);
    auto m = qc.check("alpha beta gamma delta epsilon zeta one two three four five six");
    QCOMPARE(m.kind, QuoteKind::Fabricated);
    QVERIFY(m.score < 0.8);
  }

  void emptyQuoteIsInvalid() {
    std::vector<std::string> ctx{kContext0};
    QuoteChecker qc(ctx);
    QCOMPARE(qc.check("").kind, QuoteKind::Invalid);
    QCOMPARE(qc.check(" \t\n").kind, QuoteKind::Invalid);
  }

  void formatStrictFencedAndInvalid() {
    QCOMPARE(FormatChecker::check(R"({"answer": "x", "evidence": ["a", "b"]})").kind, FormatKind::Strict);
    auto fenced = FormatChecker::check("```json\n{\"answer\": \"x\", \"evidence\": [\"q\"]}\n```\n");
    QCOMPARE(fenced.kind, FormatKind::Fenced);
    QCOMPARE(fenced.evidence.size(), size_t(1));
    QCOMPARE(FormatChecker::check("```\n{\"answer\": \"x\", \"evidence\": []}\n```").kind, FormatKind::Fenced);
    auto trailing = FormatChecker::check(R"({"answer": "x", "evidence": []} I hope this helps!)");
    QCOMPARE(trailing.kind, FormatKind::Invalid);
    QCOMPARE(QString::fromStdString(trailing.error), QString("trailing text after the JSON"));
    QCOMPARE(FormatChecker::check(R"({"answer": 3, "evidence": []})").kind, FormatKind::Invalid);
    QCOMPARE(FormatChecker::check(R"({"answer": "x", "evidence": "a"})").kind, FormatKind::Invalid);
    QCOMPARE(FormatChecker::check(R"({"answer": "x", "evidence": ["a", 2]})").kind, FormatKind::Invalid);
    QCOMPARE(FormatChecker::check(R"([{"answer": "x", "evidence": []}])").kind, FormatKind::Invalid);
    QCOMPARE(FormatChecker::check("Sure! Here it is").kind, FormatKind::Invalid);
  }

  void summaryCountsPerModel() {
    const std::string eval =
        R"({"id": "q1", "question": "?", "contexts": ["the loss fell from 2.1 to 0.9 over three epochs"]})" "\n";
    auto line = [](const char* model, const std::string& output) {
      return nlohmann::json{{"id", "q1"}, {"model", model}, {"output", output}}.dump() + "\n";
    };
    const std::string outputs =
        line("m", nlohmann::json{{"answer", "a"},
                                 {"evidence", {"the loss fell from 2.1", "the gate was lenient and saturated", ""}}}
                      .dump()) +
        line("n", "```json\n" + nlohmann::json{{"answer", "a"}, {"evidence", {"over three epochs"}}}.dump() + "\n```");
    auto set = parseEvalSet(eval, "eval.jsonl");
    QCOMPARE(QString::fromStdString(set.sha256), QString::fromStdString(sha256Hex(eval)));
    auto outs = parseOutputs(outputs, "out.jsonl");
    auto report = checkOutputs(set, outs);
    const auto& m = report.summary.at("m");
    QCOMPARE(m.jsonValid, size_t(1));
    QCOMPARE(m.quotes, size_t(2));
    QCOMPARE(m.exact, size_t(1));
    QCOMPARE(m.fabricated, size_t(1));
    QCOMPARE(m.invalid, size_t(1));
    QCOMPARE(QString::fromStdString(m.fidelityLine()), QString("50% of quotes in context (1 fabricated of 2)"));
    const auto& n = report.summary.at("n");
    QCOMPARE(n.jsonValid, size_t(0));
    QCOMPARE(n.jsonFenced, size_t(1));
    QCOMPARE(n.fidelity(), 1.0);
    auto j = reportJson(report, true);
    QCOMPARE(j["models"]["m"]["fabricated"].get<int>(), 1);
    QCOMPARE(j["samples"][0]["quotes"][0]["start"].get<int>(), 0);
    QCOMPARE(j["samples"][0]["quotes"][0]["end"].get<int>(), 22);
  }

  void seedLabFidelityLine() {
    ModelSummary m;
    m.quotes = 89;
    m.exact = 80;
    m.fuzzy = 8;
    m.fabricated = 1;
    QCOMPARE(QString::fromStdString(m.fidelityLine()), QString("99% of quotes in context (1 fabricated of 89)"));
  }

  void unknownQuestionAndBadLinesAreOneLineErrors() {
    auto set = parseEvalSet(R"({"id": "q1", "question": "?", "contexts": []})", "e");
    auto outs = parseOutputs(R"({"id": "q9", "model": "m", "output": ""})", "o");
    QVERIFY_THROWS_EXCEPTION(EvalError, checkOutputs(set, outs));
    try {
      parseOutputs("{\"id\": \"q1\", \"model\": \"m\"}\nnot json\n", "o.jsonl");
      QFAIL("expected an error");
    } catch (const EvalError& e) {
      QCOMPARE(QString(e.what()), QString("o.jsonl:1: missing \"output\""));
    }
  }

  void kappaOnKnownTables() {
    // 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> po 0.7, pe 0.5, kappa 0.4.
    std::vector<std::string> a, b;
    auto add = [&](const char* x, const char* y, int n) {
      for (int i = 0; i < n; ++i) a.push_back(x), b.push_back(y);
    };
    add("yes", "yes", 20);
    add("yes", "no", 5);
    add("no", "yes", 10);
    add("no", "no", 15);
    auto r = Agreement::compute(a, b);
    QCOMPARE(r.raw, 0.7);
    QVERIFY(r.kappa && std::abs(*r.kappa - 0.4) < 1e-12);
    // Perfect disagreement on a balanced table: kappa -1.
    auto d = Agreement::compute({"y", "n", "y", "n"}, {"n", "y", "n", "y"});
    QVERIFY(d.kappa && std::abs(*d.kappa + 1.0) < 1e-12);
    // Both constant and equal: raw 1, kappa undefined.
    auto c = Agreement::compute({"y", "y"}, {"y", "y"});
    QCOMPARE(c.raw, 1.0);
    QVERIFY(!c.kappa);
  }

  void invalidUtf8NeitherCrashesNorMatchesAcross() {
    const std::string bad = std::string("abc \xff\xfe def ghi jkl mno");
    const auto n = TextNormalizer::normalize(bad, true);
    QCOMPARE(n.origin.size(), n.text.size());
    std::vector<std::string> ctx{bad};
    QuoteChecker qc(ctx);
    QCOMPARE(qc.check("def ghi").kind, QuoteKind::Exact);
  }

  void wordAndJsonAwareDiff() {
    auto d = wordDiff("the loss fell to 0.9", "the loss fell to 1.2 quickly");
    QCOMPARE(d.size(), size_t(7));
    QCOMPARE(d[4].op, DiffToken::Removed);
    QCOMPARE(QString::fromStdString(d[4].text), QString("0.9"));
    QCOMPARE(d[5].op, DiffToken::Added);
    auto j = diffOutputs(R"({"answer": "111 steps", "evidence": ["a", "b"]})",
                         "```json\n{\"answer\": \"111 steps\", \"evidence\": [\"b\", \"c\"]}\n```");
    QVERIFY(j.json);
    QVERIFY(!j.identical());
    QCOMPARE(j.evidence.size(), size_t(3));
    QCOMPARE(j.evidence[0].op, DiffToken::Removed);  // "a" only in A
    QCOMPARE(j.evidence[2].op, DiffToken::Added);    // "c" only in B
    QVERIFY(diffOutputs("same words here", "same  words\nhere").identical());
    QVERIFY(outputsIdentical("same words here", "same  words\nhere"));
    QVERIFY(!outputsIdentical("same words here", "same words there"));
    QVERIFY(outputsIdentical(R"({"answer": "x", "evidence": ["a", "b"]})", R"({"evidence": ["b", "a"], "answer": "x"})"));
  }

  void evalFileHashIsOfItsExactBytes() {
    QTemporaryDir dir;
    const std::string line = R"({"id": "q1", "question": "?", "contexts": ["c"]})";
    for (const std::string& text : {line + "\n", line, line + "\r\n\n", "\n" + line + "\n\n"}) {
      const std::string path = dir.filePath("e.jsonl").toStdString();
      writeFileAtomic(path, text);
      const auto set = loadEvalSet(path);
      QCOMPARE(QString::fromStdString(set.sha256), QString::fromStdString(sha256Hex(text)));
      QCOMPARE(QString::fromStdString(set.sha256), QString::fromStdString(sha256File(path)));
      QCOMPARE(set.questions.size(), size_t(1));
    }
  }

  void sha256KnownVector() {
    QCOMPARE(QString::fromStdString(sha256Hex("abc")),
             QString("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  }
};

QTEST_GUILESS_MAIN(TestQuoteChecker)
#include "test_quote_checker.moc"
