#include <build_info.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <ostream>

#include "cli/command.h"
#include "core/store/schema.h"

namespace crosslab::cli {

void addVersionCommands(std::vector<Command>& commands) {
  commands.push_back({"version", "[--json]", "print the crosslab version and the lab schema it writes",
                      {{"--json", false, "print a JSON object"}},
                      [](const Args& args, Context& ctx) {
                        args.expectPositionals(0, 0);
                        if (args.has("--json")) {
                          nlohmann::json j = {{"version", CROSSLAB_VERSION},
                                              {"build_type", CROSSLAB_BUILD_TYPE},
                                              {"schema_version", store::currentSchemaVersion()},
                                              {"sqlite_version", sqlite3_libversion()}};
                          ctx.out << j.dump() << "\n";
                        } else {
                          ctx.out << "crosslab " << CROSSLAB_VERSION << " (lab schema "
                                  << store::currentSchemaVersion() << ", SQLite " << sqlite3_libversion()
                                  << ")\n";
                        }
                        return 0;
                      }});
}

}  // namespace crosslab::cli
