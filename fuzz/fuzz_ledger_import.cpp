// libFuzzer: box lives imported as JSON Lines (`crosslab-cli ledger import`, a provider's or a
// hand-run lab's records). Bad input is an ImportError with its line number and one printable
// line; an accepted stream exports and re-imports to the same lives (import → export → import
// is a fixed point, as life_jsonl.h promises).
#include <sstream>
#include <stdexcept>

#include "core/ledger/life_jsonl.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosslab;
  std::istringstream in(fuzz::text(data, size));
  std::vector<ledger::ParsedLife> lives;
  try {
    lives = ledger::parseLivesJsonl(in);
  } catch (const ledger::ImportError& e) {
    fuzz::oneLine(e.what());
    fuzz::require(e.line() >= 1, "an import error without a line number");
    return 0;
  }
  std::vector<ledger::BoxLife> plain;
  for (const auto& p : lives) plain.push_back(p.life);
  const std::string once = ledger::exportLivesJsonl(plain, nullptr);
  std::istringstream again(once);
  std::vector<ledger::ParsedLife> back;
  try {
    back = ledger::parseLivesJsonl(again);
  } catch (const ledger::ImportError& e) {
    fuzz::broken("an exported life that does not import again");
  }
  fuzz::require(back.size() == lives.size(), "export then import changed the number of lives");
  std::vector<ledger::BoxLife> plainBack;
  for (const auto& p : back) plainBack.push_back(p.life);
  fuzz::require(ledger::exportLivesJsonl(plainBack, nullptr) == once, "import -> export is not a fixed point");
  return 0;
}
