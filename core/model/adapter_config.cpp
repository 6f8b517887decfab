#include "core/model/adapter_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace crosslab::model {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error("adapter_config.json: " + why); }

bool flag(const json& cfg, const char* key) {
  const auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return false;
  if (!it->is_boolean()) fail(std::string("'") + key + "' must be true or false");
  return it->get<bool>();
}

}  // namespace

double AdapterConfig::scaling() const { return rslora ? alpha / std::sqrt(double(rank)) : alpha / double(rank); }

AdapterConfig parseAdapterConfig(const std::string& text) {
  const json cfg = json::parse(text, nullptr, false);
  if (cfg.is_discarded()) fail("not valid JSON");
  if (!cfg.is_object()) fail("not a JSON object");
  AdapterConfig c;
  const auto r = cfg.find("r");
  if (r == cfg.end() || !r->is_number_integer() || (r->is_number_unsigned() && r->get<uint64_t>() > (1u << 20)) ||
      r->get<int64_t>() <= 0 || r->get<int64_t>() > (1 << 20))
    fail("needs an integer 'r' in [1, 1048576]");
  c.rank = r->get<int64_t>();
  const auto alpha = cfg.find("lora_alpha");
  if (alpha == cfg.end() || !alpha->is_number() || !std::isfinite(alpha->get<double>()))
    fail("needs a number 'lora_alpha'");
  c.alpha = alpha->get<double>();
  if (const auto t = cfg.find("peft_type"); t != cfg.end() && !t->is_null() && *t != "LORA")
    fail("peft_type is " + t->dump() + ", not \"LORA\"");
  if (flag(cfg, "use_dora")) fail("DoRA adapters are not supported");
  if (const auto b = cfg.find("bias"); b != cfg.end() && !b->is_null() && *b != "none")
    fail("bias " + b->dump() + " is not supported (only \"none\", as vLLM)");
  c.rslora = flag(cfg, "use_rslora");
  if (const auto t = cfg.find("target_modules"); t != cfg.end() && !t->is_null()) {
    if (t->is_string()) {
      c.targetModules.push_back(t->get<std::string>());
    } else if (t->is_array()) {
      for (const auto& m : *t) {
        if (!m.is_string()) fail("'target_modules' must be names");
        c.targetModules.push_back(m.get<std::string>());
      }
    } else {
      fail("'target_modules' must be a list of names");
    }
  }
  if (const auto b = cfg.find("base_model_name_or_path"); b != cfg.end() && b->is_string()) c.baseModel = b->get<std::string>();
  return c;
}

AdapterConfig loadAdapterConfig(const std::filesystem::path& dir) {
  const auto file = dir / "adapter_config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return parseAdapterConfig(ss.str());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + std::string(e.what()).substr(std::string("adapter_config.json: ").size()));
  }
}

}  // namespace crosslab::model
