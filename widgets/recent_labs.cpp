#include "widgets/recent_labs.h"

#include <QDir>
#include <QSettings>

namespace crosslab::widgets {
namespace {
constexpr const char* kKey = "labs/recent";

void save(const QStringList& list) { QSettings().setValue(kKey, list); }
}  // namespace

QStringList RecentLabs::load() { return QSettings().value(kKey).toStringList(); }

QStringList RecentLabs::touch(const QString& path) {
  const QString clean = QDir::cleanPath(QDir(path).absolutePath());
  QStringList list = load();
  list.removeAll(clean);
  list.prepend(clean);
  while (list.size() > kMaxEntries) list.removeLast();
  save(list);
  return list;
}

QStringList RecentLabs::remove(const QString& path) {
  QStringList list = load();
  list.removeAll(QDir::cleanPath(path));
  save(list);
  return list;
}

void RecentLabs::clear() { save({}); }

QString RecentLabs::lastLab() {
  const QStringList list = load();
  return list.isEmpty() ? QString() : list.first();
}

}  // namespace crosslab::widgets
