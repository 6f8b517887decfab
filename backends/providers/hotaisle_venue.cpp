#include "backends/providers/hotaisle_venue.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "backends/secrets/keyring.h"

namespace crosslab::providers {
namespace {

std::string money(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.2f", usd);
  return buf;
}

std::string vmLine(const Vm& vm) {
  std::string s = vm.name;
  std::string detail;
  if (vm.gpuCount > 0) detail += std::to_string(vm.gpuCount) + "x " + vm.gpuModel;
  if (!vm.ipAddress.empty()) detail += (detail.empty() ? "" : ", ") + vm.ipAddress;
  if (!vm.state.empty()) detail += (detail.empty() ? "" : ", ") + vm.state;
  return detail.empty() ? s : s + " (" + detail + ")";
}

}  // namespace

QString hotAisleKey(const QString& envVar) {
  const QString var = envVar.trimmed().isEmpty() ? QString::fromLatin1(kHotAisleKeyVar) : envVar.trimmed();
  const QString key = qEnvironmentVariable(var.toUtf8().constData());
  if (!key.isEmpty()) return key;
  const auto r = secrets::readSecret(QString::fromLatin1(kHotAisleKeyring));
  if (r.ok) return r.value;
  throw ProviderError("no Hot Aisle API key: " + var.toStdString() +
                          " is not set in crosslab's environment and the OS keyring has none (" +
                          r.error.toStdString() + "); set " + var.toStdString() +
                          " before starting crosslab, or run 'crosslab-cli secrets set " + kHotAisleKeyring + "'",
                      0, Failure::BadRequest, 0);
}

HotAisleOptions optionsForBox(const venues::BoxRow& box, HotAisleOptions base) {
  if (!box.apiUrl.empty()) base.baseUrl = QString::fromStdString(box.apiUrl);
  if (!box.team.empty()) base.team = QString::fromStdString(box.team);
  base.apiKey = hotAisleKey(QString::fromStdString(box.apiKeyEnv));
  return base;
}

void recordOffersProbe(venues::VenueStore& store, const std::vector<Offer>& offers) {
  venues::ProbeRow p;
  p.venue = kHotAisle;
  nlohmann::json list = nlohmann::json::array();
  std::map<std::string, double> cheapestPerGpu;  // accelerator -> $/GPU-h
  int onShelf = 0;
  for (const auto& o : offers) {
    list.push_back({{"gpu_model", o.gpuModel}, {"gpu_count", o.gpuCount}, {"price_per_hour", o.pricePerHour},
                    {"min_minutes", o.minMinutes}, {"quantity", o.quantity}});
    if (!p.pricePerHour || o.pricePerHour < *p.pricePerHour) p.pricePerHour = o.pricePerHour;
    auto [it, fresh] = cheapestPerGpu.emplace(o.gpuModel, o.pricePerGpuHour());
    if (!fresh) it->second = std::min(it->second, o.pricePerGpuHour());
    onShelf += std::max(0, o.quantity);
  }
  p.offersJson = list.dump();
  p.availability = offers.empty() ? "not_available" : "available";
  std::string accelerators, from;
  for (const auto& [gpu, perGpu] : cheapestPerGpu) {
    accelerators += (accelerators.empty() ? "" : ", ") + gpu;
    from += (from.empty() ? "" : ", ") + gpu + " from " + money(perGpu) + "/GPU-h";
  }
  p.note = offers.empty() ? "nothing on the shelf (live inventory API)"
                          : std::to_string(offers.size()) + " offer(s), " + std::to_string(onShelf) +
                                " VM(s) on the shelf; " + from + "; no spot (live inventory API)";
  store.recordProbe(p, accelerators);
}

venues::BoxRow boxForVm(venues::VenueStore& store, const Vm& vm, const Offer& offer, const HotAisleOptions& options,
                        const QString& keyVar) {
  venues::BoxRow b;
  b.venueId = store.ensureVenue(kHotAisle, "cloud", kHotAisle);
  b.venue = kHotAisle;
  b.name = b.providerVm = vm.name;
  b.host = vm.ipAddress;
  b.user = "hotaisle";  // interfaces.md: SSH user on Hot Aisle VMs
  b.gpuModel = vm.gpuModel.empty() ? offer.gpuModel : vm.gpuModel;
  b.gpuCount = vm.gpuCount > 0 ? vm.gpuCount : offer.gpuCount;
  b.pricePerHour = offer.pricePerHour;
  b.minMinutes = offer.minMinutes;
  b.state = "provisioning";
  b.provider = kHotAisle;
  if (options.baseUrl != HotAisleOptions{}.baseUrl) b.apiUrl = options.baseUrl.toStdString();
  b.team = options.team.toStdString();
  b.apiKeyEnv = keyVar.trimmed().isEmpty() ? kHotAisleKeyVar : keyVar.trimmed().toStdString();
  return b;
}

ProvisionOutcome provisionOnce(const HotAisleOptions& options, const Offer& offer,
                               const std::set<std::string>& knownVms) {
  // What the team holds just before: a VM that shows up after an ambiguous failure and
  // was not there is very likely the one asked for. Unlistable: carry on without.
  std::optional<std::set<std::string>> before;
  try {
    std::set<std::string> names;
    for (const auto& vm : HotAisleClient(options).vms()) names.insert(vm.name);
    before = std::move(names);
  } catch (const ProviderError& e) {
    if (e.failure() == Failure::Cancelled || e.failure() == Failure::Rejected) throw;
  }
  ProvisionOutcome out;
  try {
    out.vm = HotAisleClient(options).provision(offer);
    return out;
  } catch (const ProviderError& e) {
    if (!e.ambiguous()) throw;  // nothing was rented
    out.error = e.what();
    out.ambiguous = true;
  }
  HotAisleOptions listing = options;
  listing.cancel = nullptr;  // Cancel stopped the rent request; this look must still happen
  try {
    for (auto& vm : HotAisleClient(listing).vms()) {
      if (knownVms.count(vm.name)) continue;
      if (!before || !before->count(vm.name)) out.appeared.push_back(std::move(vm));
      else out.unknown.push_back(std::move(vm));
    }
    out.listed = true;
  } catch (const std::exception& e) {
    out.listError = e.what();
  }
  return out;
}

std::string describeOutcome(const ProvisionOutcome& o) {
  if (o.vm) return "rented " + vmLine(*o.vm);
  std::string s = o.error;
  if (!o.listed)
    return s + ". The team's VMs could not be listed (" + o.listError +
           "): check the provider's console for a VM you did not make, it may bill.";
  if (o.appeared.empty() && o.unknown.empty()) return s + ". The team holds no VM this lab does not know: nothing was rented.";
  if (!o.appeared.empty()) {
    s += ". The team now holds " + std::to_string(o.appeared.size()) + " VM(s) that appeared with this request: ";
    for (size_t i = 0; i < o.appeared.size(); ++i) s += (i ? ", " : "") + vmLine(o.appeared[i]);
    s += " — recorded as box lives at the offer's price; tear down what you do not want";
  }
  if (!o.unknown.empty()) {
    s += std::string(o.appeared.empty() ? "." : ";") + " it also holds VM(s) this lab does not know: ";
    for (size_t i = 0; i < o.unknown.size(); ++i) s += (i ? ", " : "") + vmLine(o.unknown[i]);
  }
  return s + ".";
}

}  // namespace crosslab::providers
