#include <build_info.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <ostream>

#include "cli/command.h"
#include "core/infer/engine_report.h"
#include "core/store/schema.h"

namespace crosslab::cli {

namespace {

// The engine's own report: what fp32 matmul runs on in this process (the .deb's test reads it).
nlohmann::json engineJson(const infer::EngineReport& e) {
  return {{"torch", e.torchVersion},         {"threads", e.threads},       {"blas", e.blasName},
          {"blas_library", e.blasLibrary},  {"blas_config", e.blasConfig}, {"blas_threading", e.blasThreading},
          {"fast_blas", e.fastBlas}};
}

}  // namespace

void addVersionCommands(std::vector<Command>& commands) {
  commands.push_back({"version", "[--json]",
                      "print the crosslab version, the lab schema it writes and what the engine computes with",
                      {{"--json", false, "print a JSON object"}},
                      [](const Args& args, Context& ctx) {
                        args.expectPositionals(0, 0);
                        const auto engine = infer::engineReport();
                        if (args.has("--json")) {
                          nlohmann::json j = {{"version", CROSSLAB_VERSION},
                                              {"build_type", CROSSLAB_BUILD_TYPE},
                                              {"schema_version", store::currentSchemaVersion()},
                                              {"sqlite_version", sqlite3_libversion()},
                                              {"engine", engineJson(engine)}};
                          ctx.out << j.dump() << "\n";
                        } else {
                          ctx.out << "crosslab " << CROSSLAB_VERSION << " (lab schema "
                                  << store::currentSchemaVersion() << ", SQLite " << sqlite3_libversion()
                                  << ")\n"
                                  << "engine: libtorch " << engine.torchVersion << ", " << engine.threads
                                  << " threads, BLAS " << engine.blasName
                                  << (engine.blasThreading.empty() ? "" : " (" + engine.blasThreading + ")") << " "
                                  << engine.blasLibrary << "\n";
                        }
                        if (const auto warning = infer::blasWarning(engine); !warning.empty())
                          ctx.err << "warning: " << warning << "\n";
                        return 0;
                      }});
}

}  // namespace crosslab::cli
