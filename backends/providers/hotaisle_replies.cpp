#include "backends/providers/hotaisle_replies.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/util/printable.h"

namespace crosslab::providers {
namespace {

using nlohmann::json;

// A JSON number as an int: whole numbers within int's range as they are, anything past it
// clamped (a float cast out of range is undefined behaviour), NaN and non-numbers: fallback.
int intOr(const json& j, const char* key, int fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  const double v = it->is_number_float() ? it->get<double>()
                   : it->is_number_unsigned() ? static_cast<double>(it->get<std::uint64_t>())
                                              : static_cast<double>(it->get<std::int64_t>());
  if (std::isnan(v)) return fallback;
  return static_cast<int>(std::clamp(v, double(std::numeric_limits<int>::min()), double(std::numeric_limits<int>::max())));
}

double numberOr(const json& j, const char* key, double fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return (it != j.end() && it->is_number()) ? it->get<double>() : fallback;
}

std::string stringOr(const json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? *it->get_ptr<const std::string*>() : fallback;
}

// Sums that cannot overflow: counts past int's range stay at its maximum.
int addClamped(int a, int b) {
  const long long s = static_cast<long long>(a) + b;
  return static_cast<int>(std::clamp<long long>(s, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

int mulClamped(int a, int b) {
  const long long p = static_cast<long long>(a) * b;
  return static_cast<int>(std::clamp<long long>(p, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

json parseBody(const std::string& body) { return json::parse(body, nullptr, /*allow_exceptions=*/false); }

}  // namespace

json Offer::toJson() const {
  return {{"gpu_model", gpuModel}, {"gpu_count", gpuCount},   {"vcpus", vcpus},
          {"ram_gb", ramGb},       {"disk_gb", diskGb},       {"price_per_hour", pricePerHour},
          {"price_per_gpu_hour", pricePerGpuHour()}, {"min_minutes", minMinutes}, {"quantity", quantity}};
}

Offer parseOffer(const json& j) {
  Offer o;
  o.specs = j.is_object() ? j.value("Specs", json::object()) : json::object();
  const auto& s = o.specs;
  if (s.is_object() && s.contains("gpus") && s.at("gpus").is_array() && !s.at("gpus").empty()) {
    o.gpuModel = stringOr(s.at("gpus").at(0), "model", "?");
    for (const auto& gpu : s.at("gpus")) o.gpuCount = addClamped(o.gpuCount, intOr(gpu, "count", 0));
  }
  o.vcpus = intOr(s, "cpu_cores", 0);
  if (o.vcpus == 0 && s.is_object() && s.contains("cpus") && s.at("cpus").is_object())
    o.vcpus = mulClamped(intOr(s.at("cpus"), "cores", 0), std::max(1, intOr(s.at("cpus"), "count", 1)));
  o.ramGb = numberOr(s, "ram_capacity", 0) / 1e9;
  o.diskGb = numberOr(s, "disk_capacity", 0) / 1e9;
  o.pricePerHour = numberOr(j, "OnDemandPrice", 0) / 100.0;  // US cents per VM-hour
  o.minMinutes = intOr(j, "MinimumReservationMinutes", 0);
  o.quantity = intOr(j, "Quantity", -1);
  return o;
}

Vm parseVm(const json& j) {
  Vm vm;
  if (!j.is_object()) return vm;
  if (auto it = j.find("name"); it != j.end() && !it->is_null()) vm.name = it->is_string() ? it->get<std::string>() : it->dump();
  vm.ipAddress = stringOr(j, "ip_address", "");
  vm.state = stringOr(j, "state", "");
  const auto specs = j.contains("Specs") ? j.at("Specs") : j.value("specs", json::object());
  if (specs.is_object() && specs.contains("gpus") && specs.at("gpus").is_array())
    for (const auto& g : specs.at("gpus")) {
      if (vm.gpuModel.empty()) vm.gpuModel = stringOr(g, "model", "");
      vm.gpuCount = addClamped(vm.gpuCount, intOr(g, "count", 0));
    }
  return vm;
}

std::vector<Offer> readOffers(const std::string& body) {
  const auto j = parseBody(body);
  // Hot Aisle answers a bare `null` when nothing is on the shelf (gpuhunt's provider reads
  // it so too): no offers, not a bad reply. A body that is not JSON at all is refused.
  if (j.is_null()) return {};
  if (!j.is_array()) throw BadReply("Hot Aisle returned offers that are not a JSON array");
  std::vector<Offer> out;
  for (const auto& o : j)
    if (o.is_object()) out.push_back(parseOffer(o));
  return out;
}

std::vector<Vm> readVms(const std::string& body) {
  const auto j = parseBody(body);
  // A plain array, or a paginated {"results": [...]} (Django REST framework's shape).
  const json* list = &j;
  if (j.is_object() && j.contains("results")) list = &j.at("results");
  if (!list->is_array()) throw BadReply("Hot Aisle returned a VM list that is not a JSON array");
  std::vector<Vm> out;
  for (const auto& v : *list)
    if (Vm vm = parseVm(v); !vm.name.empty()) out.push_back(std::move(vm));
  return out;
}

Vm readProvisioned(const std::string& body) { return parseVm(parseBody(body)); }

std::string readState(const std::string& body) {
  const auto j = parseBody(body);
  if (!j.is_object() || !j.contains("state") || !j.at("state").is_string())
    throw BadReply("Hot Aisle's state reply has no state: " + util::printable(body));
  return j.at("state").get<std::string>();
}

std::vector<std::string> readTeams(const std::string& body) {
  const auto j = parseBody(body);
  std::vector<std::string> teams;
  if (j.is_object() && j.contains("teams") && j.at("teams").is_array())
    for (const auto& t : j.at("teams"))
      if (t.is_object() && t.contains("handle") && t.at("handle").is_string()) teams.push_back(t.at("handle"));
  return teams;
}

}  // namespace crosslab::providers
