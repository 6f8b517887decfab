#pragma once
// The recent-labs list, most recent first, persisted in QSettings ("labs/recent").

#include <QStringList>

namespace crosslab::widgets {

class RecentLabs {
 public:
  static constexpr int kMaxEntries = 8;

  static QStringList load();
  // Moves `path` to the front (adding it if new), trims to kMaxEntries, saves.
  static QStringList touch(const QString& path);
  static QStringList remove(const QString& path);
  static void clear();

  static QString lastLab();
};

}  // namespace crosslab::widgets
