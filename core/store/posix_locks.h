#pragma once
// The POSIX advisory locks this process holds on a file, read from /proc/locks (Linux).
// An idle SQLite connection in WAL mode holds a read lock on the database file and one on
// byte 128 of its -shm (the "DMS" lock); a stray open+close of either file by anything else in
// the process drops them (core/util/lab_files.h). A lab connection checks they are still there.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crosslab::store {

struct HeldLock {
  std::int64_t start = 0, end = -1;  // bytes, inclusive; end -1: to the end of the file
  bool covers(std::int64_t byte) const { return byte >= start && (end < 0 || byte <= end); }
};

// This process's locks on the inode of `path`; nullopt where that cannot be known (no
// /proc/locks, or no such file).
std::optional<std::vector<HeldLock>> heldLocks(const std::string& path);

}  // namespace crosslab::store
