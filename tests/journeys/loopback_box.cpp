#include "loopback_box.h"

#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QtTest>

#include <csignal>
#include <sys/types.h>

#include "tests/journeys/journey_support.h"
#include "tests/support/cli_runner.h"

namespace crosslab::journey {

LoopbackBox::LoopbackBox(const QString& labDir) {
  if (!sshd_.start(&error_)) return;
  auto r = testing::runCli({"box", "add", name(), "--host", "127.0.0.1", "--port", QString::number(sshd_.port()), "--user",
                            sshd_.user(), "--key", sshd_.userKey(), "--price-per-hour", "2.99", "--lab", labDir});
  if (r.code != 0) {
    error_ = "box add: " + QString::fromUtf8(r.err);
    return;
  }
  r = testing::runCli({"box", "exec", name(), "--accept-new", "--lab", labDir, "--", "true"});
  if (r.code != 0) {
    error_ = "box exec: " + QString::fromUtf8(r.err);
    return;
  }
  ok_ = true;
}

QString LoopbackBox::chooseInNewRun(QWidget* d) const {
  auto* where = d->findChild<QComboBox*>("where");
  where->setFocus();
  QTest::keyClick(where, Qt::Key_Down);  // the lab's box
  if (!where->currentText().startsWith(name())) return {};
  if (!typeInto(d->findChild<QLineEdit*>("boxFolder"), folder())) return {};
  if (!typeInto(d->findChild<QLineEdit*>("field_launcher"), testing::cliPath())) return {};  // crosslab-cli on the box
  if (!clickButton(d, "preflightButton")) return {};
  auto* report = d->findChild<QPlainTextEdit*>("preflightReport");
  if (!waitUntil([&] { return report->toPlainText().contains("nothing blocks"); }, "the preflight of the box")) return {};
  return report->toPlainText();
}

bool LoopbackBox::pidFileAlive(const QString& pidFile) {
  QFile f(pidFile);
  if (!f.open(QIODevice::ReadOnly)) return false;
  const qint64 pid = f.readAll().trimmed().toLongLong();
  return pid > 0 && ::kill(pid_t(pid), 0) == 0;
}

}  // namespace crosslab::journey
