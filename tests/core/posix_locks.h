#pragma once
// Tests: the POSIX advisory locks this process holds on a file, read from /proc/locks (Linux).
// An idle SQLite connection in WAL mode holds a read lock on the database file and one on
// byte 128 of its -shm ("DMS"); a stray open+close of either file by anything else in the
// process drops them (issue #11), which is what these tests look for.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace crosslab::testing {

// Number of /proc/locks entries of this process on `path`'s inode; -1 when unknown.
inline int posixLocksHeld(const std::string& path) {
  struct stat st {};
  std::ifstream locks("/proc/locks");
  if (::stat(path.c_str(), &st) != 0 || !locks) return -1;
  const std::string pid = std::to_string(::getpid());
  int n = 0;
  for (std::string line; std::getline(locks, line);) {
    // "3: POSIX  ADVISORY  READ 760 fe:00:11018658 128 128"
    std::istringstream in(line);
    std::string id, kind, mode, type, owner, dev;
    in >> id >> kind >> mode >> type >> owner >> dev;
    if (kind != "POSIX" || owner != pid) continue;
    const auto colon = dev.rfind(':');
    if (colon != std::string::npos && std::stoull(dev.substr(colon + 1)) == static_cast<unsigned long long>(st.st_ino)) ++n;
  }
  return n;
}

}  // namespace crosslab::testing
