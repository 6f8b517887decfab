#include "backends/lab_locations.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcessEnvironment>

#include "core/store/lab_store.h"

namespace crosslab::backends {

QString crosslabHome() {
  const QString env = QProcessEnvironment::systemEnvironment().value("CROSSLAB_HOME");
  if (!env.isEmpty()) return QDir::cleanPath(env);
  return QDir::home().filePath("crosslab");
}

QString demoLabPath() { return QDir(crosslabHome()).filePath("demo"); }

QString cliExecutable() {
  const QString env = QProcessEnvironment::systemEnvironment().value("CROSSLAB_CLI");
  if (!env.isEmpty()) return env;
  const QFileInfo beside(QDir(QCoreApplication::applicationDirPath()).filePath("crosslab-cli"));
  if (beside.isExecutable()) return beside.absoluteFilePath();
  return "crosslab-cli";
}

QString startupLab(const QStringList& positional, const QString& lastLab) {
  if (!positional.isEmpty()) return positional.first();
  if (!lastLab.isEmpty() && store::LabStore::isLab(lastLab.toStdString())) return lastLab;
  return demoLabPath();
}

}  // namespace crosslab::backends
