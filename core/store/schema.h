#pragma once
// The lab database schema as an ordered list of migrations. Migration N takes a
// database at `PRAGMA user_version = N-1` to N. Never edit a released migration:
// add the next one.

#include <string_view>
#include <vector>

namespace crosslab::store {

struct Migration {
  int version;
  std::string_view summary;
  std::string_view sql;
};

const std::vector<Migration>& migrations();

// The schema version this build writes (the last migration's version).
int currentSchemaVersion();

// The tables a lab holds, in the order `lab info` lists them.
const std::vector<std::string_view>& labTables();

}  // namespace crosslab::store
