#pragma once
// The lab's database files — lab.sqlite and the -wal, -shm and -journal SQLite keeps beside
// it — are opened by SQLite and by nothing else in our processes.
//
// Why: POSIX advisory locks belong to the process, and closing ANY descriptor of a file drops
// ALL of the process's locks on it. One stray open+close of lab.sqlite or its -shm (a hash, a
// copy, a secret scan, a file dialog typing files by their content) silently unlocks every
// SQLite connection of the process; another process then believes it is the last user,
// checkpoints and deletes the WAL under us, and our later writes go to a deleted file
// (https://www.sqlite.org/howtocorrupt.html §2.2; issue #11). So every piece of code that
// walks, reads, hashes or copies files that may lie in a lab folder asks here first.

#include <filesystem>
#include <string>

namespace crosslab::util {

inline constexpr const char* kLabDatabaseName = "lab.sqlite";

// True for a file name that is lab.sqlite or one of SQLite's files beside it (by name only).
bool isLabDatabaseName(const std::string& fileName);
// The same for a path, also when it is a symbolic link to such a file. Touches no file's
// content (names, and stat/readlink for links).
bool isLabDatabaseFile(const std::filesystem::path& path);
// The one-line refusal for such a path: "<path> is a lab's database; only SQLite opens it
// (<purpose> refused: …)".
std::string labDatabaseRefusal(const std::filesystem::path& path, const std::string& purpose);
// Throws std::runtime_error with that refusal when `path` is a lab database file.
void refuseLabDatabaseFile(const std::filesystem::path& path, const std::string& purpose);

}  // namespace crosslab::util
