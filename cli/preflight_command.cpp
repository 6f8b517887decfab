// crosslab-cli preflight: check the model folder, its provenance, the HF cache, and —
// with a recipe and a box — the memory fit per GPU and the box's free disk, before a
// rented GPU starts billing for nothing.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "cli/venue_support.h"
#include "cli/commands.h"
#include "backends/remote/box_access.h"
#include "core/venues/preflight.h"

namespace fs = std::filesystem;

namespace crosslab::backends {
namespace {

using cli::Args;
using cli::Context;
using venues::Finding;

// The memory fit per GPU of --recipe on --model, for `mem` GB cards.
void checkFitFor(const Args& args, const fs::path& model, double mem, venues::PreflightReport& report) {
  const auto recipe = train::loadRecipeFile(*args.value("--recipe"));
  std::ifstream cin(model / "config.json");
  const auto config = nlohmann::json::parse(cin, nullptr, false);
  if (config.is_discarded()) {
    report.add(Finding::Level::Warning, "fit", "not estimated: the model has no readable config.json");
    return;
  }
  const int gpus = int(args.integer("--gpus", recipe.devices, 1, 4096));
  venues::checkFit(config, recipe, gpus, mem, std::nullopt, report);
}

void checkOnBox(const Args& args, const fs::path& model, venues::PreflightReport& report, Context& ctx) {
  auto lab = openVenueLab(args);
  venues::VenueStore store(lab);
  const auto box = requireBox(store, *args.value("--box"));
  ssh::SshSession session(sshTargetFor(box, args));
  session.connect();
  const std::string dir = args.value("--remote-dir").value_or(".");
  const auto df = session.run("mkdir -p " + ssh::shellQuote(dir) + " && df -Pk " + ssh::shellQuote(dir));
  const auto avail = venues::parseDfAvailable(df.out);
  // The weights travel to the box, plus room for checkpoints and the adapter (10%).
  const std::uint64_t need = remote::folderBytes(model) + remote::folderBytes(model) / 10;
  if (avail) venues::checkDisk(*avail, need, report);
  else report.add(Finding::Level::Warning, "disk", "could not read free space on " + box.name);
  std::optional<double> mem;
  if (args.has("--gpu-memory-gb")) mem = args.number("--gpu-memory-gb", 0);
  else {
    remote::SshShell host(session, box.name);
    mem = remote::gpuMemoryGb(host);
  }
  if (!mem) {
    report.add(Finding::Level::Warning, "fit",
               "not estimated: GPU memory of " + box.name + " unknown (no nvidia-smi or rocm-smi; pass --gpu-memory-gb)");
    return;
  }
  checkFitFor(args, model, *mem, report);
  ctx.err << "checked " << box.name << " (" << *mem << " GB per GPU)\n";
}

// Provenance errors become warnings when the user overrides them knowingly.
void applyOverride(venues::PreflightReport& report) {
  for (auto& f : report.findings)
    if (f.check == "provenance" && f.level == Finding::Level::Error) {
      f.level = Finding::Level::Warning;
      f.message += " (overridden with --allow-mismatch)";
    }
}

int preflight(const Args& args, Context& ctx) {
  args.expectPositionals(0, 0);
  const auto model = args.value("--model");
  if (!model) throw cli::UsageError("--model DIR is required");
  if (args.has("--box") && !args.has("--recipe")) throw cli::UsageError("--box needs --recipe FILE (the run to fit)");
  if (args.has("--recipe") && !args.has("--box") && !args.has("--gpu-memory-gb"))
    throw cli::UsageError("--recipe needs --gpu-memory-gb GB, or --box NAME to ask the box");
  if (args.has("--gpu-memory-gb")) args.number("--gpu-memory-gb", 0, 1e-3, 1e6);
  venues::PreflightReport report;
  venues::checkModelFolder(*model, report);
  if (auto hashes = args.value("--hashes")) venues::checkProvenance(*model, *hashes, args.has("--all-shards"), report);
  if (auto hf = args.value("--hf-home")) venues::checkHfCache(*hf, report);
  if (args.has("--box")) checkOnBox(args, *model, report, ctx);
  else if (args.has("--recipe")) checkFitFor(args, *model, args.number("--gpu-memory-gb", 0), report);
  if (args.has("--allow-mismatch")) applyOverride(report);
  if (args.has("--lab")) {  // recorded with the lab so a run can cite it
    auto lab = store::LabStore::open(*args.value("--lab"));
    lab.addEvent(std::nullopt, std::nullopt, "preflight", "preflight " + *model, report.toJson().dump());
  }
  if (args.has("--json")) {
    ctx.out << report.toJson().dump() << "\n";
  } else {
    size_t warnings = 0;
    for (const auto& f : report.findings) {
      ctx.out << (f.level == Finding::Level::Ok ? "ok     " : f.level == Finding::Level::Warning ? "warning" : "ERROR  ")
              << "  " << f.check << ": " << f.message << "\n";
      warnings += f.level == Finding::Level::Warning;
    }
    // Always a verdict, also when every check passed without a remark.
    if (!report.blocked())
      ctx.out << "preflight passed for " << *model << " (" << report.findings.size() << " findings, " << warnings
              << " warnings)\n";
  }
  if (!report.blocked()) return 0;
  for (const auto& f : report.findings)
    if (f.level == Finding::Level::Error) throw std::runtime_error("preflight blocked: " + f.check + ": " + f.message);
  return 1;
}

}  // namespace

void addPreflightCommands(std::vector<cli::Command>& commands) {
  commands.push_back({"preflight", "--model DIR [--hashes FILE] [--recipe FILE --box NAME] [--json]",
                      "check a model folder, its provenance, the HF cache, fit and disk before the meter runs",
                      {{"--model", true, "Hugging Face model folder (local)", true},
                       {"--hashes", true, "reference SHA-256s (sha256sum format)"},
                       {"--all-shards", false, "hash every shard too (slow on big models)"},
                       {"--allow-mismatch", false, "run despite a provenance mismatch (recorded)"},
                       {"--hf-home", true, "Hugging Face cache to check for foreign lock files"},
                       {"--recipe", true, "recipe JSON for the fit estimate"},
                       {"--box", true, "box to check fit and free disk on"},
                       {"--gpus", true, "GPUs the run uses (default: the recipe's)"},
                       {"--gpu-memory-gb", true, "GPU memory per card (default: ask nvidia-smi / rocm-smi)"},
                       {"--remote-dir", true, "folder on the box the run writes to (default: home)"},
                       {"--lab", true, "record the result in this lab"},
                       {"--accept-new", false, "trust an unknown host key"},
                       {"--known-hosts", true, "known_hosts file"},
                       {"--json", false, "print JSON"}},
                      preflight});
}

}  // namespace crosslab::backends
