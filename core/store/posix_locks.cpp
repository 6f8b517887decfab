#include "core/store/posix_locks.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace crosslab::store {

std::optional<std::vector<HeldLock>> heldLocks(const std::string& path) {
  struct stat st {};
  std::ifstream locks("/proc/locks");
  if (::stat(path.c_str(), &st) != 0 || !locks) return std::nullopt;
  const std::string pid = std::to_string(::getpid());
  std::vector<HeldLock> out;
  for (std::string line; std::getline(locks, line);) {
    // "3: POSIX  ADVISORY  READ 760 fe:00:11018658 128 128" (waiters carry a "->" and are skipped)
    std::istringstream in(line);
    std::string id, kind, mode, type, owner, dev, start, end;
    in >> id >> kind >> mode >> type >> owner >> dev >> start >> end;
    if (kind != "POSIX" || owner != pid) continue;
    // MAJOR:MINOR:INODE, the device numbers in hex
    const auto first = dev.find(':'), last = dev.rfind(':');
    if (first == std::string::npos || first == last) continue;
    try {
      if (std::stoull(dev.substr(last + 1)) != static_cast<unsigned long long>(st.st_ino) ||
          std::stoul(dev.substr(0, first), nullptr, 16) != major(st.st_dev) ||
          std::stoul(dev.substr(first + 1, last - first - 1), nullptr, 16) != minor(st.st_dev))
        continue;
      out.push_back({std::stoll(start), end == "EOF" ? -1 : std::stoll(end)});
    } catch (const std::exception&) {
      continue;  // a line we do not understand is no lock of ours
    }
  }
  return out;
}

}  // namespace crosslab::store
