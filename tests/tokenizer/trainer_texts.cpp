#include "tests/tokenizer/trainer_texts.h"

#include "core/demo/demo_corpus.h"

namespace crosslab::testing {

std::vector<std::string> trainerCorpus() {
  const auto corpus = demo::makeDemoCorpus(17, 120, 10);
  std::vector<std::string> texts = {demo::demoSystemPrompt()};
  for (const auto& ex : corpus.train) texts.push_back(demo::demoUserPrompt(ex) + "\n" + ex.answerJson());
  return texts;
}

std::vector<std::string> probeTexts() {
  std::vector<std::string> t = {
      "Hello world",
      " ",
      "   leading spaces and trailing   ",
      "tabs\tand\t\tmore\t",
      "line\nbreaks\r\nand\n\n\nruns \n \n",
      "I'm, you're, he's, we've, they'll, I'd, DON'T",
      "1 12 123 1234 12345 3.14159 -42 0x1F 1,000,000",
      "def f(x):\n    return x**2  # square\n",
      "{\"answer\": \"$1.95/h\", \"evidence\": [\"box mi300x-7 costs $1.95 per hour\"]}",
      "naïve café résumé Ångström Straße",
      "Привет, как дела? Ελληνικά κείμενα.",
      "日本語のテキストと中文文本，还有한국어。",
      "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ ✨",
      "combining: e\u0301 a\u0308 n\u0303",
      "nbsp\u00a0here, ideographic\u3000space",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
      "not special: <|eot_id |> <| eot_id|>",
      "\x01\x02\x7f control bytes and \U0001F600 astral",
  };
  const auto corpus = demo::makeDemoCorpus(17, 120, 10);
  for (const auto& ex : corpus.eval) t.push_back(demo::demoUserPrompt(ex) + "\n" + ex.answerJson());  // unseen text
  return t;
}

}  // namespace crosslab::testing
