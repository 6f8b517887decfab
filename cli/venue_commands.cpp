// crosslab-cli venues …: cloud offers, provisioning, state, delete; the box list with its
// meter; the availability ladder and its timeline.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "cli/venue_support.h"
#include "cli/commands.h"
#include "backends/providers/hotaisle_venue.h"
#include "core/util/lab_files.h"
#include "core/venues/timeline_file.h"

namespace crosslab::backends {
namespace {

using cli::Args;
using cli::Context;

double nowEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const std::vector<cli::OptionSpec> kProviderOptions = {
    {"--provider", true, "cloud provider (hotaisle)"},
    {"--api-url", true, "API base URL (default $HOTAISLE_API_URL, else https://admin.hotaisle.app/api)"},
    {"--team", true, "team handle that owns the VMs"},
    {"--api-key-env", true, "environment variable holding the API key (default HOTAISLE_API_KEY)"},
    {"--provider-timeout", true, "seconds to give the provider per call, retries included (default 90)"},
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

// A live probe: the "hotaisle" rung of the ladder and its probe history.
void recordProbe(const Args& args, const std::vector<providers::Offer>& offers) {
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  providers::recordOffersProbe(store, offers);
}

int venuesOffers(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  providers::HotAisleClient client(hotAisleOptions(args));
  const auto offers = sortedOffers(client);
  recordProbe(args, offers);
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

// The provider VM names the lab already tracks (active lives).
std::set<std::string> knownVms(venues::VenueStore& store) {
  std::set<std::string> names;
  for (const auto& b : store.boxes())
    if (b.rented()) names.insert(b.providerVm);
  return names;
}

// --offer INDEX, or --gpu MODEL --gpus N: checked before any key is looked up or request made.
void checkOfferChoice(const Args& args) {
  if (args.has("--offer")) {
    if (args.has("--gpu") || args.has("--gpus")) throw cli::UsageError("--offer or --gpu/--gpus, not both");
    args.integer("--offer", 0, 0);
    return;
  }
  if (!args.has("--gpu") || !args.has("--gpus")) throw cli::UsageError("choose an offer: --offer INDEX, or --gpu MODEL --gpus N");
  args.integer("--gpus", 1, 1);
}

int venuesProvision(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  checkOfferChoice(args);
  const int timeout = int(args.integer("--wait-timeout", 900, 0, 7 * 24 * 3600));
  const int pollMs = int(args.integer("--poll-ms", 5000, 1, 3600 * 1000));
  const auto options = hotAisleOptions(args);
  const std::string keyVar = args.value("--api-key-env").value_or(providers::kHotAisleKeyVar);
  providers::HotAisleClient client(options);
  if (auto pub = args.value("--ssh-key")) client.registerSshKey(readPublicKey(*pub));
  const auto offer = chooseOffer(args, sortedOffers(client));
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  store.ensureVenue(providers::kHotAisle, "cloud", providers::kHotAisle);
  store.addMilestone(providers::kHotAisle, venues::milestone::kProvisionRequest, store::utcNow());
  // One POST; a failure with an unknown outcome lists the team's VMs instead of retrying.
  const auto outcome = providers::provisionOnce(options, offer, knownVms(store));
  if (!outcome.vm) {
    for (const auto& vm : outcome.appeared) {  // probably ours: watch its meter
      auto box = providers::boxForVm(store, vm, offer, options, QString::fromStdString(keyVar));
      box.state = vm.state.empty() ? "unknown" : vm.state;
      store.addBox(box);
    }
    throw std::runtime_error(providers::describeOutcome(outcome));
  }
  const auto& vm = *outcome.vm;
  // Recorded before waiting: from here on the VM bills, whatever happens next.
  auto box = providers::boxForVm(store, vm, offer, options, QString::fromStdString(keyVar));
  box.name = args.value("--name").value_or(vm.name);
  box.keyFile = args.value("--key").value_or("");
  const auto boxId = store.addBox(box);
  box.id = boxId;
  store.noteLifeMilestone(box, venues::milestone::kProvisioned, vm.name);
  ctx.err << "provisioned " << vm.name << " (" << offer.gpuCount << "x " << offer.gpuModel << ", $" << std::fixed
          << std::setprecision(2) << offer.pricePerHour << "/h, " << offer.minMinutes
          << " min minimum); waiting for it to run\n";
  try {
    client.waitRunning(vm.name, pollMs, timeout);
  } catch (const std::exception& e) {
    store.setBoxState(boxId, "unknown");
    throw std::runtime_error(std::string(e.what()) + " (box '" + box.name + "' is recorded; 'venues delete " +
                             box.name + "' stops the meter)");
  }
  store.markReady(boxId, vm.ipAddress);
  store.noteLifeMilestone(box, venues::milestone::kRunning);
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

// A recorded box is reached the way it was rented (its URL, team, key variable); flags
// given on the command line win.
providers::HotAisleOptions optionsForBox(const Args& args, const std::optional<venues::BoxRow>& box) {
  if (!box) return hotAisleOptions(args);
  venues::BoxRow b = *box;
  if (auto url = args.value("--api-url")) b.apiUrl = *url;
  if (auto team = args.value("--team")) b.team = *team;
  if (auto var = args.value("--api-key-env")) b.apiKeyEnv = *var;
  return providers::optionsForBox(b, hotAisleBounds(args));
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
  venues::LifeEnd end;
  if (box) end = store.endBox(box->id, "deleted", nowEpoch());  // booked once, whoever ends it
  if (args.has("--json")) {
    ctx.out << nlohmann::json{{"name", vm}, {"deleted", true}, {"already_gone", !deleted}, {"usd", end.usd},
                              {"booked_now", end.endedNow}}.dump()
            << "\n";
  } else {
    ctx.out << vm << (deleted ? " deleted" : " was already gone (nothing to delete)");
    if (box && end.endedNow) ctx.out << "; this life cost $" << std::fixed << std::setprecision(2) << end.usd;
    if (box && !end.endedNow) ctx.out << "; its life had already been ended and booked at " << end.endedAt;
    ctx.out << "\n";
  }
  return 0;
}

std::string fixed2(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << v;
  return s.str();
}

nlohmann::json boxJson(venues::VenueStore& store, const venues::BoxRow& b, double now) {
  const auto m = store.meter(b, now);
  return {{"name", b.name},          {"venue", b.venue},       {"host", b.host},
          {"port", b.port},          {"user", b.user},         {"state", b.state},
          {"gpu_model", b.gpuModel}, {"gpu_count", b.gpuCount}, {"price_per_hour", b.pricePerHour.value_or(0)},
          {"min_minutes", b.minMinutes}, {"provisioned_at", b.provisionedAt}, {"deleted_at", b.deletedAt},
          {"uptime_s", m.elapsedHours * 3600}, {"cost_usd", b.pricePerHour ? nlohmann::json(m.usd) : nlohmann::json()},
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
            << m.elapsedHours << " h  " << (b.pricePerHour ? "$" + fixed2(m.usd) : std::string("unpriced")) << "\n";
  }
  ctx.out << "total $" << std::fixed << std::setprecision(2) << total << "\n";
  return 0;
}

const std::vector<std::string> kAvailability = {"unknown",       "available", "not_offered", "not_available",
                                                 "no_quota",      "capacity",  "busy",        "idle"};

int venuesLadder(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto rows = store.venues();
  if (args.has("--json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& v : rows)
      arr.push_back({{"venue", v.name}, {"kind", v.kind}, {"provider", v.provider}, {"region", v.region},
                     {"accelerator", v.accelerator}, {"availability", v.availability},
                     {"price_per_hour", v.pricePerHour ? nlohmann::json(*v.pricePerHour) : nlohmann::json()},
                     {"spot_price_per_hour", v.spotPricePerHour ? nlohmann::json(*v.spotPricePerHour) : nlohmann::json()},
                     {"quota", v.quota}, {"probed_at", v.probedAt}, {"notes", v.notes}});
    ctx.out << arr.dump() << "\n";
    return 0;
  }
  for (const auto& v : rows)
    ctx.out << std::left << std::setw(28) << v.name << std::setw(14) << v.availability << std::setw(22) << v.probedAt
            << v.quota << (v.quota.empty() ? "" : "  ") << v.notes << "\n";
  return 0;
}

int venuesLadderSet(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  venues::VenueRow row;
  row.name = args.positional(0, "VENUE");
  row.availability = args.value("--availability").value_or("");
  if (std::find(kAvailability.begin(), kAvailability.end(), row.availability) == kAvailability.end())
    throw cli::UsageError("--availability must be one of: unknown, available, not_offered, not_available, no_quota, "
                          "capacity, busy, idle");
  row.kind = args.value("--kind").value_or("cloud");
  if (row.kind != "cloud" && row.kind != "ssh" && row.kind != "local") throw cli::UsageError("--kind: cloud, ssh or local");
  row.provider = args.value("--provider").value_or("");
  row.region = args.value("--region").value_or("");
  row.accelerator = args.value("--accelerator").value_or("");
  row.pricePerHour = args.optionalNumber("--price");
  row.spotPricePerHour = args.optionalNumber("--spot");
  row.quota = args.value("--quota").value_or("");
  row.notes = args.value("--notes").value_or("");
  row.probedAt = args.value("--at").value_or("");
  if (!row.probedAt.empty() && !venues::parseUtc(row.probedAt)) throw cli::UsageError("--at takes an ISO-8601 UTC time");
  auto lab = openVenueLab(args);
  venues::VenueStore(lab).recordLadder(row);
  ctx.out << "recorded " << row.name << ": " << row.availability << "\n";
  return 0;
}

int venuesTimeline(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const std::string venue = args.positional(0, "VENUE");
  if (auto at = args.value("--at"); at && !venues::parseUtc(*at)) throw cli::UsageError("--at takes an ISO-8601 UTC time");
  if (args.has("--at") && !args.has("--add")) throw cli::UsageError("--at goes with --add");
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  if (auto milestone = args.value("--add"))
    store.addMilestone(venue, *milestone, args.value("--at").value_or(store::utcNow()), args.value("--note").value_or(""),
                       0, "entered");
  if (auto file = args.value("--import")) {
    util::refuseLabDatabaseFile(*file, "timeline import");
    std::ifstream in(*file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + *file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<venues::Milestone> read;
    try {
      read = venues::parseTimelineFile(text);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(*file + ", " + e.what() + " (nothing imported)");
    }
    store.addMilestones(venue, read);  // all or nothing
    ctx.err << "imported " << read.size() << " milestone(s) from " << *file << "\n";
  }
  const auto t = store.timeline(venue);
  const auto s = venues::summarizeTimeline(t);
  if (args.has("--json")) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& m : t) {
      nlohmann::json j{{"milestone", m.name}, {"at", venues::formatUtc(m.at)}, {"source", m.source}};
      if (!m.note.empty()) j["note"] = m.note;
      arr.push_back(j);
    }
    ctx.out << nlohmann::json{{"venue", venue}, {"milestones", arr}, {"elapsed_s", s.elapsedSeconds},
                              {"active_s", s.activeSeconds}}.dump()
            << "\n";
    return 0;
  }
  for (const auto& m : t) ctx.out << venues::formatUtc(m.at) << "  " << m.name << "\n";
  ctx.out << "elapsed " << s.elapsedSeconds / 60 << " min, active human time " << s.activeSeconds / 60 << " min\n";
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
  const cli::OptionSpec lab{"--lab", true, "lab (default $CROSSLAB_HOME/home)"};
  commands.push_back({"venues ladder", "[--lab LAB] [--json]", "the availability ladder: what each venue offered, when",
                      {lab, {"--json", false, "print JSON"}}, venuesLadder});
  commands.push_back({"venues ladder set", "VENUE --availability A [--price USD] [--spot USD] [--quota TEXT] …",
                      "record a manual ladder entry (a probe where no API exists)",
                      {lab,
                       {"--availability", true, "available, not_offered, not_available, no_quota, capacity, …", true},
                       {"--kind", true, "cloud (default), ssh or local"},
                       {"--provider", true, "provider"},
                       {"--region", true, "region"},
                       {"--accelerator", true, "accelerator, e.g. MI300X"},
                       {"--price", true, "on-demand USD per hour"},
                       {"--spot", true, "spot USD per hour"},
                       {"--quota", true, "quota figures as found"},
                       {"--notes", true, "anything else"},
                       {"--at", true, "when it was found (ISO-8601 UTC; default now)"}},
                      venuesLadderSet});
  commands.push_back({"venues timeline", "VENUE [--add MILESTONE [--at TIME] [--note TEXT]] [--import FILE] [--json]",
                      "account-to-silicon milestones with elapsed and active human time",
                      {lab, {"--add", true, "record a milestone (account created, key minted, …)"},
                       {"--at", true, "its time (ISO-8601 UTC; default now)"},
                       {"--note", true, "a note kept with it"},
                       {"--import", true, "milestones from a file: JSON Lines {milestone, at}, the --json output, or "
                                          "'TIME NAME' lines (all or nothing)"},
                       {"--json", false, "print JSON"}},
                      venuesTimeline});
}

}  // namespace crosslab::backends
