// crosslab-cli venues …: cloud offers, provisioning, state, delete; the box list with its
// meter; the availability ladder and its timeline.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "backends/cli/cli_support.h"
#include "backends/cli/venue_commands.h"

namespace crosslab::backends {
namespace {

using cli::Args;
using cli::Context;

double nowEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const std::vector<cli::OptionSpec> kProviderOptions = {
    {"--provider", true, "cloud provider (hotaisle)"},
    {"--api-url", true, "API base URL (default https://admin.hotaisle.app/api)"},
    {"--team", true, "team handle that owns the VMs"},
    {"--api-key-env", true, "environment variable holding the API key (default HOTAISLE_API_KEY)"},
    {"--lab", true, "lab to record boxes in (default $CROSSLAB_HOME/home)"},
    {"--json", false, "print JSON"}};

std::vector<cli::OptionSpec> withOptions(std::vector<cli::OptionSpec> extra) {
  auto all = kProviderOptions;
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

// Offers in the order both `offers` and `provision --offer INDEX` use: cheapest GPU-hour first.
std::vector<providers::Offer> sortedOffers(providers::HotAisleClient& client) {
  auto offers = client.offers();
  std::stable_sort(offers.begin(), offers.end(), [](const auto& a, const auto& b) {
    if (a.pricePerGpuHour() != b.pricePerGpuHour()) return a.pricePerGpuHour() < b.pricePerGpuHour();
    return a.pricePerHour < b.pricePerHour;  // same GPU-hour: the smaller commitment first
  });
  return offers;
}

int venuesOffers(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  providers::HotAisleClient client(hotAisleOptions(args));
  const auto offers = sortedOffers(client);
  if (args.has("--json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < offers.size(); ++i) {
      auto j = offers[i].toJson();
      j["index"] = i;
      arr.push_back(j);
    }
    ctx.out << arr.dump() << "\n";
    return 0;
  }
  ctx.out << "  #  GPU            vCPU   RAM GB   disk GB    $/h   $/GPU-h  min\n";
  for (size_t i = 0; i < offers.size(); ++i) {
    const auto& o = offers[i];
    ctx.out << std::setw(3) << i << "  " << std::left << std::setw(14) << (std::to_string(o.gpuCount) + "x " + o.gpuModel)
            << std::right << std::setw(5) << o.vcpus << std::fixed << std::setprecision(0) << std::setw(9) << o.ramGb
            << std::setw(10) << o.diskGb << std::setprecision(2) << std::setw(7) << o.pricePerHour << std::setw(10)
            << o.pricePerGpuHour() << std::setw(5) << o.minMinutes << "\n";
  }
  return 0;
}

providers::Offer chooseOffer(const Args& args, const std::vector<providers::Offer>& offers) {
  if (auto index = args.value("--offer")) {
    size_t i = 0;
    try {
      i = std::stoul(*index);
    } catch (const std::exception&) {
      throw cli::UsageError("--offer needs a number");
    }
    if (i >= offers.size())
      throw std::runtime_error("no offer #" + *index + " (" + std::to_string(offers.size()) + " on the shelf)");
    return offers[i];
  }
  const auto gpu = args.value("--gpu");
  const auto gpus = args.value("--gpus");
  if (!gpu || !gpus) throw cli::UsageError("choose an offer: --offer INDEX, or --gpu MODEL --gpus N");
  for (const auto& o : offers)
    if (o.gpuModel == *gpu && std::to_string(o.gpuCount) == *gpus) return o;
  throw std::runtime_error("no offer with " + *gpus + "x " + *gpu + " on the shelf now");
}

std::string readPublicKey(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || (line.rfind("ssh-", 0) != 0 && line.rfind("ecdsa-", 0) != 0))
    throw std::runtime_error(file + " is not an SSH public key");
  return line;
}

int venuesProvision(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const auto options = hotAisleOptions(args);
  providers::HotAisleClient client(options);
  if (auto pub = args.value("--ssh-key")) client.registerSshKey(readPublicKey(*pub));
  const auto offer = chooseOffer(args, sortedOffers(client));
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto venueId = store.ensureVenue("hotaisle", "cloud", "hotaisle");
  store.addMilestone("hotaisle", "provision request", store::utcNow());
  const auto vm = client.provision(offer);
  // Recorded before waiting: from here on the VM bills, whatever happens next.
  venues::BoxRow box;
  box.venueId = venueId;
  box.name = args.value("--name").value_or(vm.name);
  box.host = vm.ipAddress;
  box.user = "hotaisle";
  box.keyFile = args.value("--key").value_or("");
  box.gpuModel = offer.gpuModel;
  box.gpuCount = offer.gpuCount;
  box.pricePerHour = offer.pricePerHour;
  box.minMinutes = offer.minMinutes;
  box.state = "provisioning";
  box.providerVm = vm.name;
  box.team = options.team.toStdString();
  const auto boxId = store.addBox(box);
  ctx.err << "provisioned " << vm.name << " (" << offer.gpuCount << "x " << offer.gpuModel << ", $" << std::fixed
          << std::setprecision(2) << offer.pricePerHour << "/h, " << offer.minMinutes
          << " min minimum); waiting for it to run\n";
  const int timeout = std::stoi(args.value("--wait-timeout").value_or("900"));
  const int pollMs = std::stoi(args.value("--poll-ms").value_or("5000"));
  try {
    client.waitRunning(vm.name, pollMs, timeout);
  } catch (const std::exception& e) {
    store.setBoxState(boxId, "unknown");
    throw std::runtime_error(std::string(e.what()) + " (box '" + box.name + "' is recorded; 'venues delete " +
                             box.name + "' stops the meter)");
  }
  store.markReady(boxId, vm.ipAddress);
  if (args.has("--json"))
    ctx.out << nlohmann::json{{"name", box.name}, {"ip_address", vm.ipAddress}, {"state", "running"}}.dump() << "\n";
  else
    ctx.out << box.name << " running at " << vm.ipAddress << "\n";
  return 0;
}

// The provider VM name and team for NAME: a recorded box, else NAME itself with --team.
std::pair<std::string, std::optional<venues::BoxRow>> resolveVm(venues::VenueStore& store, const std::string& name) {
  auto box = store.activeBox(name);
  if (box && !box->providerVm.empty()) return {box->providerVm, box};
  return {name, std::nullopt};
}

providers::HotAisleOptions optionsForBox(const Args& args, const std::optional<venues::BoxRow>& box) {
  auto o = hotAisleOptions(args);
  if (o.team.isEmpty() && box) o.team = QString::fromStdString(box->team);
  return o;
}

int venuesState(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto [vm, box] = resolveVm(store, args.positional(0, "NAME"));
  providers::HotAisleClient client(optionsForBox(args, box));
  const std::string state = client.state(vm);
  if (box && box->state != state && state == "running" && box->readyAt.empty()) store.markReady(box->id, "");
  else if (box && box->state != state) store.setBoxState(box->id, state);
  if (args.has("--json")) ctx.out << nlohmann::json{{"name", vm}, {"state", state}}.dump() << "\n";
  else ctx.out << vm << " " << state << "\n";
  return 0;
}

int venuesDelete(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto [vm, box] = resolveVm(store, args.positional(0, "NAME"));
  providers::HotAisleClient client(optionsForBox(args, box));
  const bool deleted = client.remove(vm);
  double usd = 0;
  if (box) usd = store.endBox(box->id, "deleted", nowEpoch());
  if (args.has("--json")) {
    ctx.out << nlohmann::json{{"name", vm}, {"deleted", true}, {"already_gone", !deleted}, {"usd", usd}}.dump() << "\n";
  } else {
    ctx.out << vm << (deleted ? " deleted" : " was already gone (nothing to delete)");
    if (box) ctx.out << "; this life cost $" << std::fixed << std::setprecision(2) << usd;
    ctx.out << "\n";
  }
  return 0;
}

nlohmann::json boxJson(venues::VenueStore& store, const venues::BoxRow& b, double now) {
  const auto m = store.meter(b, now);
  return {{"name", b.name},          {"venue", b.venue},       {"host", b.host},
          {"port", b.port},          {"user", b.user},         {"state", b.state},
          {"gpu_model", b.gpuModel}, {"gpu_count", b.gpuCount}, {"price_per_hour", b.pricePerHour.value_or(0)},
          {"min_minutes", b.minMinutes}, {"provisioned_at", b.provisionedAt}, {"deleted_at", b.deletedAt},
          {"uptime_s", m.elapsedHours * 3600}, {"cost_usd", m.usd},
          {"idle_s", b.active() ? store.idleSeconds(b, now) : 0.0}};
}

int venuesList(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const double now = nowEpoch();
  const auto boxes = store.boxes(args.has("--all"));
  if (args.has("--json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& b : boxes) arr.push_back(boxJson(store, b, now));
    ctx.out << arr.dump() << "\n";
    return 0;
  }
  double total = 0;
  for (const auto& b : boxes) {
    const auto m = store.meter(b, now);
    total += m.usd;
    ctx.out << std::left << std::setw(16) << b.name << std::setw(13) << b.state << std::setw(22)
            << (b.user + "@" + b.host) << std::right << std::fixed << std::setprecision(1) << std::setw(7)
            << m.elapsedHours << " h  $" << std::setprecision(2) << m.usd << "\n";
  }
  ctx.out << "total $" << std::fixed << std::setprecision(2) << total << "\n";
  return 0;
}

}  // namespace

void addVenueCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"venues offers", "--provider hotaisle --team T [--api-url URL] [--api-key-env VAR] [--json]",
                      "list a provider's offers, cheapest GPU-hour first", kProviderOptions, venuesOffers});
  commands.push_back({"venues provision",
                      "--provider hotaisle --team T (--offer INDEX | --gpu MODEL --gpus N) [--name NAME] [--lab LAB] [--json]",
                      "rent a VM, record it as a box, wait until it runs",
                      withOptions({{"--offer", true, "offer number as 'venues offers' lists it"},
                                   {"--gpu", true, "GPU model, e.g. MI300X"},
                                   {"--gpus", true, "GPU count"},
                                   {"--name", true, "box name (default: the provider's VM name)"},
                                   {"--ssh-key", true, "public key file to register first (409 = already there)"},
                                   {"--key", true, "private key file to reach the box with"},
                                   {"--wait-timeout", true, "seconds to wait for 'running' (default 900)"},
                                   {"--poll-ms", true, "state poll interval in ms (default 5000)"}}),
                      venuesProvision});
  commands.push_back({"venues state", "NAME [--team T] [--json]", "ask the provider for a VM's state",
                      kProviderOptions, venuesState});
  commands.push_back({"venues delete", "NAME [--team T] [--json]",
                      "delete a VM (already gone is fine) and book its cost", kProviderOptions, venuesDelete});
  commands.push_back({"venues list", "[--lab LAB] [--all] [--json]", "boxes with state, uptime and running cost",
                      {{"--lab", true, "lab (default $CROSSLAB_HOME/home)"},
                       {"--all", false, "include ended box lives"},
                       {"--json", false, "print JSON"}},
                      venuesList});
}

}  // namespace crosslab::backends
