#include "core/util/lab_files.h"

#include <stdexcept>

namespace fs = std::filesystem;

namespace crosslab::util {

bool isLabDatabaseName(const std::string& fileName) {
  const std::string base = kLabDatabaseName;
  if (fileName == base) return true;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (fileName == base + suffix) return true;
  return false;
}

bool isLabDatabaseFile(const fs::path& path) {
  if (isLabDatabaseName(path.filename().string())) return true;
  std::error_code ec;
  if (!fs::is_symlink(path, ec)) return false;
  const fs::path target = fs::weakly_canonical(path, ec);
  return !ec && isLabDatabaseName(target.filename().string());
}

std::string labDatabaseRefusal(const fs::path& path, const std::string& purpose) {
  return path.string() + " is a lab's database; only SQLite opens it (" + purpose +
         " refused: opening it here would drop the lab's locks)";
}

void refuseLabDatabaseFile(const fs::path& path, const std::string& purpose) {
  if (isLabDatabaseFile(path)) throw std::runtime_error(labDatabaseRefusal(path, purpose));
}

}  // namespace crosslab::util
