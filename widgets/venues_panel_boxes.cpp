// The Venues panel's box actions: add a box, tear one down, run a command on it, push
// and pull files. Each SSH action runs on the worker thread through sshJob(), which asks
// for an encrypted key's passphrase before connecting and asks a real question about an
// unknown host key (fingerprint, what Yes does) before trusting it.
#include <QDir>
#include <QFileInfo>
#include <QLineEdit>
#include <QSet>
#include <QTableView>

#include <algorithm>
#include <chrono>

#include "backends/lab_session.h"
#include "backends/providers/hotaisle_venue.h"
#include "backends/secrets/keyring.h"
#include "backends/ssh/ssh_session.h"
#include "core/ledger/friction_log.h"
#include "core/store/lab_store.h"
#include "widgets/background_job.h"
#include "widgets/boxes_model.h"
#include "widgets/friction_dialog.h"
#include "widgets/venue_dialogs.h"
#include "widgets/venues_panel.h"

namespace crosslab::widgets {
namespace {

double nowEpoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

QString money(double usd) { return QString("$%1").arg(usd, 0, 'f', 2); }

QString nameOf(const venues::BoxRow& b) { return QString::fromStdString(b.name); }

}  // namespace

void VenuesPanel::addBox() {
  auto* lab = session_->store();
  if (!lab) return hint(tr("Open a lab first: boxes are recorded in it"));
  venues::VenueStore store(*lab);
  QSet<QString> taken;
  for (const auto& b : store.boxes()) taken.insert(nameOf(b));
  AddBoxDialog dialog(taken, this);
  if (dialog.exec() != QDialog::Accepted) return;
  venues::BoxRow box = dialog.box();
  try {
    box.venueId = store.ensureVenue(box.name, "ssh");
    box.state = "ready";
    box.readyAt = store::utcNow();
    box.id = store.addBox(box);
  } catch (const std::exception& e) {
    return setStatus(tr("Box not added: %1").arg(QString::fromStdString(e.what())));
  }
  refresh();
  for (int r = 0; r < boxes_->rowCount(); ++r)
    if (boxes_->row(r).box.id == box.id) boxesTable_->selectRow(r);
  setStatus(tr("Added box %1 (%2@%3:%4)")
                .arg(nameOf(box), QString::fromStdString(box.user), QString::fromStdString(box.host))
                .arg(box.port));
}

void VenuesPanel::teardownBox(int row) {
  if (row < 0 || row >= boxes_->rowCount()) return hint(tr("Select a box to tear down first"));
  const auto r = boxes_->row(row);
  if (!r.box.active())
    return hint(tr("The life of %1 ended already (%2)").arg(nameOf(r.box), QString::fromStdString(r.box.deletedAt)));
  const QString text =
      !r.box.rented()
          ? tr("Forget the box %1? Nothing is deleted on the machine; its life ends in the lab.").arg(nameOf(r.box))
          : tr("Tear down %1? The VM is deleted at %2 (team %3) and its data is lost.\n\n"
               "This life has cost %4 so far (%5 billed).")
                .arg(nameOf(r.box),
                     QString::fromStdString(r.box.apiUrl.empty() ? std::string("Hot Aisle") : r.box.apiUrl),
                     QString::fromStdString(r.box.team), money(r.meter.usd),
                     formatDuration(r.meter.billedHours * 3600));
  if (!confirm_(tr("Tear down"), text)) return setStatus(tr("Tear down cancelled: %1 keeps running").arg(nameOf(r.box)));
  teardownConfirmed(r.box);
}

void VenuesPanel::teardownConfirmed(const venues::BoxRow& box) {
  const std::int64_t id = box.id;
  const QString name = nameOf(box);
  // Booked once: if another process ended this life meanwhile, endBox leaves it be.
  auto finish = [this, id, name](const char* state) {
    if (!session_->store()) return;
    const auto end = venues::VenueStore(*session_->store()).endBox(id, state, nowEpoch());
    if (end.endedNow)
      appendLog(name, tr("%1; this life cost %2\n").arg(QString::fromLatin1(state), money(end.usd)));
    else
      appendLog(name, tr("its life had already ended (%1 at %2) and was booked then; nothing booked twice\n")
                          .arg(QString::fromStdString(end.state), QString::fromStdString(end.endedAt)));
    refresh();
    // A life that ended here with debug time offers a friction entry, pre-filled.
    if (!end.endedNow) return;
    if (auto offer = ledger::FrictionLog(*session_->store()).suggestFromBoxLife(id);
        offer && confirm_(tr("Log friction"), tr("%1 ended with %2 of debug time (%3). Log it in the friction log?")
                                                  .arg(name, formatDuration(offer->minutes.value_or(0) * 60),
                                                       money(offer->usd.value_or(0))))) {
      FrictionDialog dialog(*session_->store(), *offer, this);
      dialog.exec();
    }
  };
  if (!box.rented()) return finish("removed");
  if (!box.provider.empty() && box.provider != providers::kHotAisle)
    return setStatus(tr("%1 was rented from %2, which this build cannot reach").arg(name, QString::fromStdString(box.provider)));
  providers::HotAisleOptions bounds;  // the box's own URL, team and key; the form's bound
  bounds.deadlineMs = formOptions().deadlineMs;
  bounds.timeoutMs = std::min(bounds.timeoutMs, bounds.deadlineMs);
  auto gone = std::make_shared<bool>(false);
  startJob(
      tr("Tearing down %1").arg(name),
      [box, bounds, gone](const std::atomic<bool>& cancel) {
        auto o = providers::optionsForBox(box, bounds);
        o.cancel = &cancel;
        *gone = !providers::HotAisleClient(o).remove(box.providerVm);
      },
      [this, finish, gone, name](const QString& error) {
        if (!error.isEmpty()) return appendLog(name, tr("teardown failed: %1\nThe VM may still bill.\n").arg(error));
        if (*gone) appendLog(name, tr("the VM was already gone at the provider\n"));
        finish("deleted");
      });
}

void VenuesPanel::sshJob(const venues::BoxRow& box, const QString& label, SshAction action, Done done, bool acceptNew,
                         std::shared_ptr<std::string> passphrase, const std::function<void()>& started) {
  if (job_) return hint(tr("Busy: %1 (Cancel it first)").arg(job_->label()));
  ssh::SshTarget t{box.host, box.port, box.user, box.keyFile, knownHosts_.toStdString(), acceptNew, 15, {}};
  // An encrypted key: ask here, on the GUI thread, before the worker connects; the worker
  // reads the answer once and it is wiped as soon as the connection is authenticated.
  if (!passphrase && !box.keyFile.empty() && ssh::keyIsEncrypted(box.keyFile)) {
    auto answer = askPassphrase_ ? askPassphrase_(QString::fromStdString(box.keyFile)) : std::nullopt;
    if (!answer) return setStatus(tr("Cancelled: no passphrase for %1").arg(QString::fromStdString(box.keyFile)));
    passphrase = std::make_shared<std::string>(answer->toStdString());
    answer->fill(QChar(u'\0'));
  }
  if (passphrase) t.askPassphrase = [passphrase](const std::string&) { return *passphrase; };
  struct HostKey {
    bool unknown = false;
    QString fingerprint;
  };
  auto hostKey = std::make_shared<HostKey>();
  if (started) started();
  startJob(
      label,
      [this, t, box, action, passphrase, hostKey](const std::atomic<bool>& cancel) {
        ssh::SshSession s(t);
        try {
          s.connect();
        } catch (const ssh::HostKeyError& e) {
          hostKey->unknown = !e.changed();
          hostKey->fingerprint = QString::fromStdString(e.fingerprint());
          throw;  // before authentication: the passphrase may serve a retry
        } catch (...) {
          if (passphrase) ssh::wipe(*passphrase);
          throw;
        }
        if (passphrase) ssh::wipe(*passphrase);  // authenticated: not needed again
        post([this, box] {
          if (session_->store()) venues::VenueStore(*session_->store()).noteLifeMilestone(box, venues::milestone::kSshReady);
        });
        action(s, cancel);
      },
      [this, box, label, action, done, acceptNew, passphrase, hostKey](const QString& error) {
        // Unknown host: a real question. The host key is checked before the key is opened,
        // so the passphrase asked already serves the retry. A changed key is never offered.
        if (!error.isEmpty() && hostKey->unknown && !acceptNew) {
          const QString where = QString::fromStdString(box.user + "@" + box.host + ":" + std::to_string(box.port));
          if (confirm_(tr("Unknown host key"), hostKeyQuestion(where, hostKey->fingerprint, knownHosts_)))
            return sshJob(box, label, action, done, true, passphrase);
          if (passphrase) ssh::wipe(*passphrase);
          return done(tr("Not connected: the host key of %1 was not trusted").arg(where));
        }
        if (passphrase) ssh::wipe(*passphrase);
        done(error);
      });
}

void VenuesPanel::runOnBox(int row, const QString& command, bool acceptNewHostKey) {
  if (row < 0 || row >= boxes_->rowCount()) return hint(tr("Select a box to run a command on first"));
  if (command.trimmed().isEmpty()) return hint(tr("Type a command to run on the box first"));
  const auto box = boxes_->row(row).box;
  if (!box.active()) return hint(tr("The life of %1 has ended: nothing to run it on").arg(nameOf(box)));
  if (box.host.empty()) return hint(tr("%1 has no address yet (state %2)").arg(nameOf(box), QString::fromStdString(box.state)));
  if (auto hit = venues::SecretGuard::fromEnvironment().findIn(command.toStdString()))
    return setStatus(tr("Refused: the command contains %1; secrets stay on this machine").arg(QString::fromStdString(*hit)));
  const QString name = nameOf(box);
  auto started = [this, box, name, command] {
    if (session_->store()) venues::VenueStore(*session_->store()).touchBox(box.id, "exec", command.left(200).toStdString());
    reloadBoxes();  // its idle clock starts again
    appendLog(name, "$ " + command + "\n");
  };
  auto status = std::make_shared<int>(-1);
  sshJob(
      box, tr("Running on %1").arg(name),
      [this, name, command, status](ssh::SshSession& s, const std::atomic<bool>& cancel) {
        auto sink = [this, name](const char* d, std::size_t n) {
          const QString text = QString::fromUtf8(d, static_cast<int>(n));
          post([this, name, text] { appendLog(name, text); });
        };
        *status = s.exec(command.toStdString(), sink, sink, &cancel);
      },
      [this, name, status](const QString& error) {
        if (!error.isEmpty()) {
          setStatus(error);
          return appendLog(name, error + "\n");
        }
        appendLog(name, tr("[exit %1]\n").arg(*status));
      },
      acceptNewHostKey, nullptr, started);
}

std::function<void(std::uint64_t, std::uint64_t)> VenuesPanel::transferProgress() {
  auto last = std::make_shared<int>(-1);
  return [this, last](std::uint64_t done, std::uint64_t total) {
    const int permille = total ? static_cast<int>(1000.0 * static_cast<double>(done) / static_cast<double>(total)) : 0;
    if (permille == *last) return;
    *last = permille;
    post([this, done, total] { setTransferProgress(done, total); });
  };
}

void VenuesPanel::pushToBox(int row) {
  if (row < 0 || row >= boxes_->rowCount()) return hint(tr("Select a box to push a file to first"));
  const auto box = boxes_->row(row).box;
  if (!box.active()) return hint(tr("The life of %1 has ended: nothing to push to").arg(nameOf(box)));
  const QString local = chooseFile_(tr("Push a file to %1").arg(nameOf(box)), QDir::homePath(), false);
  if (local.isEmpty()) return;
  QString remote = remotePath_->text().trimmed();
  if (remote.isEmpty() || remote.endsWith('/')) remote += QFileInfo(local).fileName();
  const QString name = nameOf(box);
  auto started = [this, box, name, local, remote] {
    if (session_->store())
      venues::VenueStore(*session_->store()).touchBox(box.id, "transfer", ("push " + local + " -> " + remote).toStdString());
    reloadBoxes();  // its idle clock starts again
    appendLog(name, tr("push %1 -> %2\n").arg(local, remote));
  };
  sshJob(
      box, tr("Pushing %1 to %2").arg(QFileInfo(local).fileName(), name),
      [local, remote, progress = transferProgress()](ssh::SshSession& s, const std::atomic<bool>& cancel) {
        secrets::outgoingGuard().checkPath(local.toStdString());  // before anything leaves
        s.upload(local.toStdString(), remote.toStdString(),
                 progress, true, &cancel);
      },
      [this, name, remote](const QString& error) {
        appendLog(name, error.isEmpty() ? tr("pushed to %1\n").arg(remote) : error + "\n");
      },
      false, nullptr, started);
}

void VenuesPanel::pullFromBox(int row) {
  if (row < 0 || row >= boxes_->rowCount()) return hint(tr("Select a box to pull a file from first"));
  const auto box = boxes_->row(row).box;
  if (!box.active()) return hint(tr("The life of %1 has ended: nothing to pull from").arg(nameOf(box)));
  const QString remote = remotePath_->text().trimmed();
  if (remote.isEmpty() || remote.endsWith('/')) return hint(tr("Type the path of the file on the box first"));
  const QString local = chooseFile_(tr("Save %1 from %2 as").arg(remote, nameOf(box)),
                                    QDir::home().filePath(QFileInfo(remote).fileName()), true);
  if (local.isEmpty()) return;
  const QString name = nameOf(box);
  auto started = [this, box, name, local, remote] {
    if (session_->store())
      venues::VenueStore(*session_->store()).touchBox(box.id, "transfer", ("pull " + remote + " -> " + local).toStdString());
    reloadBoxes();  // its idle clock starts again
    appendLog(name, tr("pull %1 -> %2\n").arg(remote, local));
  };
  sshJob(
      box, tr("Pulling %1 from %2").arg(QFileInfo(remote).fileName(), name),
      [local, remote, progress = transferProgress()](ssh::SshSession& s, const std::atomic<bool>& cancel) {
        s.download(remote.toStdString(), local.toStdString(),
                   progress, true, &cancel);
      },
      [this, name, local](const QString& error) {
        appendLog(name, error.isEmpty() ? tr("pulled into %1\n").arg(local) : error + "\n");
      },
      false, nullptr, started);
}

}  // namespace crosslab::widgets
