// The Venues panel offscreen: offers from the Hot Aisle stand-in sorted by $/GPU-hour,
// provisioning behind a price + minimum-billing confirmation, the live meter, cancel,
// teardown, the ladder and timeline, and a command on a loopback SSH box whose unknown
// host key is asked about, and an encrypted key whose passphrase is asked in a dialog.
#include <QApplication>
#include <QInputDialog>
#include <QLabel>
#include <QTimer>
#include <QtTest>

#include <QSortFilterProxyModel>
#include <QTableWidget>

#include "backends/lab_session.h"
#include "core/store/lab_store.h"
#include "core/venues/venue_store.h"
#include "hotaisle_standin.h"
#include "sshd_fixture.h"
#include "widgets/boxes_model.h"
#include "widgets/offers_model.h"
#include "widgets/venues_panel.h"

using crosslab::backends::LabSession;
using crosslab::widgets::BoxesModel;
using crosslab::widgets::OffersModel;
using crosslab::widgets::VenuesPanel;

class TestVenuesPanel : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  HotAisleStandin standin_;
  QStringList asked_;

  std::unique_ptr<VenuesPanel> panel(LabSession& session, bool answer = true) {
    auto p = std::make_unique<VenuesPanel>(&session);
    p->setProviderSettings(QString::fromStdString(standin_.baseUrl()), "lab", "CROSSLAB_TEST_HOTAISLE_KEY");
    p->setPollMs(10);
    p->setKnownHostsFile(tmp_.filePath("known_hosts"));
    p->setConfirmer([this, answer](const QString&, const QString& text) {
      asked_ << text;
      return answer;
    });
    return p;
  }

  static int viewRowWithPrice(VenuesPanel& p, double perHour) {
    auto* proxy = p.offersView();
    for (int r = 0; r < proxy->rowCount(); ++r)
      if (qFuzzyCompare(proxy->index(r, OffersModel::PerHour).data(Qt::UserRole).toDouble(), perHour)) return r;
    return -1;
  }

  // Lives booked by the ledger's recorder (core/ledger): one life.deleted event each.
  static qint64 ledgerRows(LabSession& s) {
    return s.store()->db().scalarInt("SELECT count(*) FROM events WHERE type = 'life.deleted'");
  }

 private slots:
  void initTestCase() {
    QVERIFY(standin_.start() > 0);
    qputenv("CROSSLAB_TEST_HOTAISLE_KEY", HotAisleStandin::kKey);
  }

  void offersSortByGpuHour() {
    LabSession s;
    auto p = panel(s);
    crosslab::providers::Offer a, b, c;
    a.gpuModel = "MI300X", a.gpuCount = 8, a.pricePerHour = 20.0;  // $2.50 per GPU-hour
    b.gpuModel = "H100", b.gpuCount = 1, b.pricePerHour = 3.50;
    c.gpuModel = "MI355X", c.gpuCount = 2, c.pricePerHour = 6.0;  // $3.00 per GPU-hour
    p->offersModel()->setOffers({b, c, a});
    auto* proxy = p->offersView();
    QCOMPARE(proxy->index(0, OffersModel::Gpu).data().toString(), QString("MI300X"));
    QCOMPARE(proxy->index(2, OffersModel::Gpu).data().toString(), QString("H100"));
    proxy->sort(OffersModel::PerGpuHour, Qt::DescendingOrder);
    QCOMPARE(proxy->index(0, OffersModel::Gpu).data().toString(), QString("H100"));
  }

  void provisionMeterAndTeardown() {
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab1"), "lab1", &err));
    auto p = panel(s);
    p->fetchOffers();
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    QCOMPARE(p->offersModel()->rowCount(), 2);
    const int row = viewRowWithPrice(*p, 2.99);
    QVERIFY(row >= 0);
    asked_.clear();
    p->provisionOffer(row);
    QCOMPARE(asked_.size(), 1);
    QVERIFY2(asked_[0].contains("$2.99/h") && asked_[0].contains("at least 1 minute"), qPrintable(asked_[0]));
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    QCOMPARE(p->boxesModel()->rowCount(), 1);
    const auto& box = p->boxesModel()->row(0).box;
    QCOMPARE(QString::fromStdString(box.state), QString("running"));
    QVERIFY(p->boxLog(QString::fromStdString(box.name)).contains("state: running"));
    p->tickMeter();
    QVERIFY(p->boxesModel()->totalCost() >= 2.99 / 60 - 1e-9);  // the minimum is billed from the start
    QVERIFY(p->findChild<QLabel*>("totalCost")->text().contains("$0.05"));
    asked_.clear();
    p->teardownBox(0);
    QVERIFY(asked_.value(0).contains("Tear down"));
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    QCOMPARE(p->boxesModel()->rowCount(), 0);
    QCOMPARE(ledgerRows(s), qint64{1});
  }

  void closingWithABillingBoxAsksAndCanTearItDown() {
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab7"), "lab7", &err));
    auto p = panel(s);
    QVERIFY(p->confirmClose("Quit"));  // nothing bills: no question
    p->fetchOffers();
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    p->provisionOffer(viewRowWithPrice(*p, 2.99));
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    QCOMPARE(p->billingBoxes().size(), size_t{1});
    const QString name = QString::fromStdString(p->billingBoxes()[0].name);
    QStringList questions;
    auto answer = VenuesPanel::CloseChoice::Cancel;
    p->setCloseAsker([&](const QString& text) {
      questions << text;
      return answer;
    });
    QVERIFY(!p->confirmClose("Quit"));
    QVERIFY2(questions.value(0).contains(name) && questions.value(0).contains("$2.99/h") &&
                 questions.value(0).contains("so far") && questions.value(0).contains("Quit anyway?"),
             qPrintable(questions.value(0)));
    answer = VenuesPanel::CloseChoice::LeaveRunning;
    QVERIFY(p->confirmClose("Quit"));
    QCOMPARE(p->billingBoxes().size(), size_t{1});  // still billing, still recorded
    answer = VenuesPanel::CloseChoice::TearDown;
    QVERIFY(p->confirmClose("Close the lab"));
    QVERIFY(p->billingBoxes().empty());
    QCOMPARE(ledgerRows(s), qint64{1});
  }

  void declinedConfirmationSendsNothing() {
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab2"), "lab2", &err));
    auto p = panel(s, false);
    p->fetchOffers();
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    const int before = standin_.requests();
    p->provisionOffer(0);
    QVERIFY(!p->busy());
    QCOMPARE(standin_.requests(), before);
    QCOMPARE(p->boxesModel()->rowCount(), 0);
  }

  void cancelWhileWaitingKeepsTheBillingBoxRecorded() {
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab3"), "lab3", &err));
    auto p = panel(s);
    p->fetchOffers();
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    standin_.pollsUntilRunning = 1000000;
    p->provisionOffer(0);
    QTRY_VERIFY_WITH_TIMEOUT(p->boxesModel()->rowCount() == 1, 30000);
    p->cancelJob();
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    standin_.pollsUntilRunning = 2;
    QVERIFY2(p->statusText().contains("cancelled"), qPrintable(p->statusText()));
    const QString name = QString::fromStdString(p->boxesModel()->row(0).box.name);
    QVERIFY(p->boxLog(name).contains("may still exist and bill"));
    p->teardownBox(0);
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    QCOMPARE(p->boxesModel()->rowCount(), 0);
  }

  void ladderTimelineAndIdleWarning() {
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab4"), "lab4", &err));
    crosslab::venues::VenueStore store(*s.store());
    crosslab::venues::VenueRow aws;
    aws.name = "aws/us-east-1/g4ad";
    aws.kind = "cloud";
    aws.availability = "capacity";
    aws.notes = "spot placement score 3/10";
    store.recordLadder(aws);
    store.addMilestone("hotaisle", "account created", "2026-01-01T00:45:14Z");
    store.addMilestone("hotaisle", "key minted", "2026-01-01T22:30:00Z");
    store.addMilestone("hotaisle", "provision request", "2026-01-01T22:39:40Z");
    store.addMilestone("hotaisle", "first token", "2026-01-01T22:47:00Z");
    crosslab::venues::BoxRow b;
    b.venueId = store.ensureVenue("spark", "ssh");
    b.name = "spark";
    b.host = "10.0.0.9";
    b.user = "me";
    b.pricePerHour = 1.0;
    b.state = "ready";
    b.provisionedAt = b.readyAt = "2026-01-01T00:00:00Z";  // long ago: idle ever since
    store.addBox(b);
    crosslab::venues::BoxRow ws = b;  // a workstation: no price, idle as long, not billing
    ws.name = "workstation";
    ws.pricePerHour.reset();
    store.addBox(ws);
    auto p = panel(s);
    p->refresh();
    auto* ladder = p->ladderTable();
    QCOMPARE(ladder->rowCount(), 3);  // aws, hotaisle, spark (the workstation shares spark's venue)
    int hot = -1;
    for (int r = 0; r < ladder->rowCount(); ++r)
      if (ladder->item(r, 0)->text() == "hotaisle") hot = r;
    ladder->setCurrentCell(hot, 0);
    QVERIFY2(p->timelineSummary().contains("active human time 17 m 00 s"), qPrintable(p->timelineSummary()));
    QCOMPARE(p->boxesModel()->idleCount(), 1);  // the priced one only
    QCOMPARE(p->billingBoxes().size(), size_t{1});
    QVERIFY(p->findChild<QLabel*>("totalCost")->text().contains("idle and still billing"));
  }

  void commandOnABoxAsksAboutAnUnknownHostKey() {
    SshdFixture sshd;
    QString why;
    QVERIFY2(sshd.start(&why), qPrintable(why));
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab5"), "lab5", &err));
    crosslab::venues::VenueStore store(*s.store());
    crosslab::venues::BoxRow b;
    b.venueId = store.ensureVenue("loop", "ssh");
    b.name = "loop";
    b.host = "127.0.0.1";
    b.port = sshd.port();
    b.user = sshd.user().toStdString();
    b.keyFile = sshd.userKey().toStdString();
    b.state = "ready";
    store.addBox(b);
    auto p = panel(s);
    p->refresh();
    asked_.clear();
    p->runOnBox(0, "echo hello from the box");
    QTRY_VERIFY_WITH_TIMEOUT(p->boxLog("loop").contains("[exit 0]"), 30000);
    QVERIFY(p->boxLog("loop").contains("hello from the box"));
    QCOMPARE(asked_.size(), 1);
    QVERIFY2(asked_[0].contains("has not connected to") && asked_[0].contains("SHA256:") &&
                 asked_[0].contains("Yes trusts this key"),
             qPrintable(asked_[0]));
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    // A planted secret never leaves.
    qputenv("CROSSLAB_TEST_API_TOKEN", "tok-0123456789abcdef");
    p->runOnBox(0, "echo tok-0123456789abcdef");
    QVERIFY(!p->busy());
    QVERIFY(p->statusText().contains("CROSSLAB_TEST_API_TOKEN"));
    qunsetenv("CROSSLAB_TEST_API_TOKEN");
  }

  void encryptedKeyAsksForItsPassphrase() {
    SshdFixture sshd;
    QString why;
    QVERIFY2(sshd.start(&why), qPrintable(why));
    const QString key = sshd.addEncryptedUserKey("open sesame", &why);
    QVERIFY2(!key.isEmpty(), qPrintable(why));
    LabSession s;
    QString err;
    QVERIFY(s.requestCreate(tmp_.filePath("lab6"), "lab6", &err));
    crosslab::venues::VenueStore store(*s.store());
    crosslab::venues::BoxRow b;
    b.venueId = store.ensureVenue("loop", "ssh");
    b.name = "locked";
    b.host = "127.0.0.1";
    b.port = sshd.port();
    b.user = sshd.user().toStdString();
    b.keyFile = key.toStdString();
    b.state = "ready";
    store.addBox(b);
    auto p = panel(s);
    p->setKnownHostsFile(tmp_.filePath("known_hosts_locked"));
    p->refresh();
    asked_.clear();

    // The panel's own prompt: a password-mode QInputDialog, answered as a user would.
    int dialogs = 0;
    bool passwordMode = false;
    QTimer answer;
    answer.setInterval(10);
    QObject::connect(&answer, &QTimer::timeout, [&] {
      auto* d = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
      if (!d) return;
      ++dialogs;
      passwordMode = d->textEchoMode() == QLineEdit::Password;
      d->setTextValue("open sesame");
      d->accept();
    });
    answer.start();
    p->runOnBox(0, "echo unlocked");
    QTRY_VERIFY_WITH_TIMEOUT(p->boxLog("locked").contains("[exit 0]"), 30000);
    answer.stop();
    QVERIFY(p->boxLog("locked").contains("unlocked"));
    QCOMPARE(dialogs, 1);  // asked once, though the unknown host key made it connect twice
    QVERIFY(passwordMode);
    QCOMPARE(asked_.size(), 1);
    QVERIFY(asked_[0].contains("SHA256:"));
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);

    // A wrong passphrase: a clear error in the log and the status line.
    QStringList prompts;
    p->setPassphrasePrompt([&prompts](const QString& file) -> std::optional<QString> {
      prompts << file;
      return QString("not it");
    });
    p->runOnBox(0, "echo again");
    QTRY_VERIFY_WITH_TIMEOUT(!p->busy(), 30000);
    QCOMPARE(prompts, QStringList{key});
    QVERIFY2(p->boxLog("locked").contains("wrong passphrase for key " + key), qPrintable(p->boxLog("locked")));
    QVERIFY(p->statusText().contains("wrong passphrase"));
    QVERIFY(!p->boxLog("locked").contains("again\n[exit"));

    // Cancelled: nothing runs.
    p->setPassphrasePrompt([](const QString&) -> std::optional<QString> { return std::nullopt; });
    const QString before = p->boxLog("locked");
    p->runOnBox(0, "echo never");
    QVERIFY(!p->busy());
    QVERIFY(p->statusText().contains("Cancelled: no passphrase"));
    QCOMPARE(p->boxLog("locked"), before);
    // The passphrases never reach the log.
    QVERIFY(!before.contains("open sesame") && !before.contains("not it"));
  }
};

QTEST_MAIN(TestVenuesPanel)
#include "test_venues_panel.moc"
