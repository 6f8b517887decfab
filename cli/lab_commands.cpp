#include <nlohmann/json.hpp>

#include <filesystem>
#include <iomanip>
#include <ostream>

#include "cli/command.h"
#include "core/store/lab_store.h"

namespace crosslab::cli {
namespace {

nlohmann::json infoJson(const store::LabInfo& info) {
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& c : info.counts) counts[c.table] = c.rows;
  return {{"path", std::filesystem::absolute(info.path).string()},
          {"name", info.name},
          {"created_at", info.createdAt},
          {"schema_version", info.schemaVersion},
          {"counts", counts}};
}

int labInit(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  const std::filesystem::path dir = args.positional(0, "PATH");
  const std::string name = args.value("--name").value_or(std::filesystem::absolute(dir).filename().string());
  auto lab = store::LabStore::create(dir, name);
  if (args.has("--json"))
    ctx.out << infoJson(lab.info()).dump() << "\n";
  else
    ctx.out << "created lab '" << name << "' at " << dir.string() << " (schema " << lab.schemaVersion()
            << ")\n";
  return 0;
}

int labInfo(const Args& args, Context& ctx) {
  args.expectPositionals(1, 1);
  auto lab = store::LabStore::open(args.positional(0, "PATH"));
  const auto info = lab.info();
  if (args.has("--json")) {
    ctx.out << infoJson(info).dump() << "\n";
    return 0;
  }
  ctx.out << "lab      " << info.name << "\n"
          << "path     " << std::filesystem::absolute(info.path).string() << "\n"
          << "created  " << info.createdAt << "\n"
          << "schema   " << info.schemaVersion << "\n\n";
  for (const auto& c : info.counts) ctx.out << "  " << std::left << std::setw(18) << c.table << c.rows << "\n";
  return 0;
}

}  // namespace

void addLabCommands(std::vector<Command>& commands) {
  commands.push_back({"lab init", "PATH [--name NAME] [--json]",
                      "create a lab folder (lab.sqlite, models/, data/, runs/, reports/)",
                      {{"--name", true, "the lab's name (default: the folder's name)"},
                       {"--json", false, "print the new lab's info as JSON"}},
                      labInit});
  commands.push_back({"lab info", "PATH [--json]",
                      "show a lab's schema version and the row count of every table",
                      {{"--json", false, "print a JSON object"}},
                      labInfo});
}

}  // namespace crosslab::cli
