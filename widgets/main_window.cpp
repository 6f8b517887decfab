#include "widgets/main_window.h"

#include <build_info.h>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QScreen>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QVBoxLayout>
#include <spdlog/spdlog.h>

#include "backends/lab_session.h"
#include "widgets/benchmarks_panel.h"
#include "core/store/lab_store.h"
#include "widgets/demo_progress_view.h"
#include "widgets/demo_runner.h"
#include "widgets/empty_state_panel.h"
#include "widgets/ledger_panel.h"
#include "widgets/venues_panel.h"
#include "widgets/log_panel.h"
#include "widgets/review_panel.h"
#include "widgets/recent_labs.h"
#include "widgets/theme.h"
#include "widgets/training_panel.h"
#include "widgets/file_dialogs.h"

namespace crosslab::widgets {
namespace {

// What each panel will hold, and what writes its data today. The wording must stay
// true to the build: a command is named as available only once it exists.
QVector<PanelSpec> panelSpecs() {
  return {
      {QObject::tr("Venues"),
       QObject::tr("GPU boxes you rent or attach: cloud offers and the availability ladder, "
                   "SSH boxes, each VM life with its live meter, and teardown."),
       {"venues", "boxes"},
       QObject::tr("Written by <code>crosslab-cli venues …</code> and <code>crosslab-cli box …</code>, "
                   "which arrive with the Venues capability; this build does not have them yet.")},
      {QObject::tr("Training"),
       QObject::tr("LoRA runs, local and remote: the run list, live loss and learning-rate charts, "
                   "the dead-run watchdog, and run comparison."),
       {"runs", "metrics", "events"},
       QObject::tr("Written by <code>crosslab-cli train</code> and <code>crosslab-cli demo</code>, "
                   "which arrive with the LoRA training capability; this build does not have them yet.")},
      {QObject::tr("Benchmarks"),
       QObject::tr("Throughput sweeps against any OpenAI-compatible endpoint: tok/s per stream and "
                   "aggregate per concurrency level, TTFT, TPOT, and $ per million output tokens."),
       {"benchmarks", "benchmark_levels"},
       QObject::tr("Written by <code>crosslab-cli bench</code>, which arrives with the serving and "
                   "benchmark capability; this build does not have it yet.")},
      {QObject::tr("Review"),
       QObject::tr("Model outputs side by side with every instrument: JSON validity, mechanical "
                   "quote verification, judge gates with calibration, and human verdicts."),
       {"samples", "verdicts"},
       QObject::tr("Written by <code>crosslab-cli eval check</code>, <code>eval judge</code> and "
                   "<code>eval generate</code>, and by verdicts entered in this panel.")},
      {QObject::tr("Ledger"),
       QObject::tr("Compute versus staging cost per VM life, the friction log, and the report "
                   "that regenerates the lab's tables from the raw records."),
       {"ledger", "friction", "box_work", "box_transfers"},
       QObject::tr("Written as crosslab works on a box (provision, transfers, runs, sweeps, delete), by "
                   "<code>crosslab-cli ledger import|spend|credit</code> and <code>crosslab-cli friction add</code>, "
                   "and by this panel.")},
  };
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), session_(new backends::LabSession(this)), theme_(new Theme(this)) {
  setWindowTitle("crosslab");
  setWindowIcon(QIcon(":/icons/crosslab.svg"));

  sidebar_ = new QListWidget(this);
  sidebar_->setObjectName("sidebar");
  sidebar_->setFrameShape(QFrame::NoFrame);
  sidebar_->setIconSize(QSize(20, 20));
  sidebar_->setMaximumWidth(200);
  sidebar_->setStyleSheet("QListWidget#sidebar::item { padding-left: 10px; }");
  stack_ = new QStackedWidget(this);
  stack_->setObjectName("panels");

  // The panels, with room above them for the first start's progress.
  auto* right = new QWidget(this);
  rightColumn_ = new QVBoxLayout(right);
  rightColumn_->setContentsMargins(0, 0, 0, 0);
  rightColumn_->setSpacing(0);
  rightColumn_->addWidget(stack_, 1);

  auto* splitter = new QSplitter(this);
  splitter->addWidget(sidebar_);
  splitter->addWidget(right);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({170, 900});
  setCentralWidget(splitter);

  log_ = new LogPanel(this);
  logDock_ = new QDockWidget(tr("Log"), this);
  logDock_->setObjectName("logDock");
  logDock_->setWidget(log_);
  addDockWidget(Qt::BottomDockWidgetArea, logDock_);
  resizeDocks({logDock_}, {150}, Qt::Vertical);

  labLabel_ = new QLabel(this);
  labLabel_->setObjectName("labStatus");
  statusBar()->addWidget(labLabel_, 1);

  buildPanels();
  buildMenus();
  connect(sidebar_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
  connect(session_, &backends::LabSession::labChanged, this, &MainWindow::updateLabStatus);
  connect(session_, &backends::LabSession::labFilesLost, this, &MainWindow::onLabFilesLost);
  showPanel(Training);
  updateLabStatus();
  restoreSettings();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildPanels() {
  const QStyle::StandardPixmap icons[] = {QStyle::SP_DriveNetIcon, QStyle::SP_MediaPlay, QStyle::SP_ComputerIcon,
                                          QStyle::SP_FileDialogDetailedView, QStyle::SP_FileDialogListView};
  int i = 0;
  for (const auto& spec : panelSpecs()) {
    titles_.push_back(spec.title);
    auto* item = new QListWidgetItem(style()->standardIcon(icons[i++]), spec.title, sidebar_);
    item->setSizeHint(QSize(0, 34));
    if (spec.title == tr("Venues"))
      stack_->addWidget(new VenuesPanel(session_, stack_));
    else if (spec.title == tr("Training"))
      stack_->addWidget(new TrainingPanel(session_, stack_));
    else if (spec.title == tr("Benchmarks"))
      stack_->addWidget(new BenchmarksPanel(session_, stack_));
    else if (spec.title == tr("Review"))
      stack_->addWidget(new ReviewPanel(session_, stack_));
    else if (spec.title == tr("Ledger"))
      stack_->addWidget(new LedgerPanel(session_, stack_));
    else
      stack_->addWidget(new EmptyStatePanel(spec, session_, stack_));
  }
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu(tr("&Lab"));
  auto* newLab = file->addAction(tr("&New Lab…"), this, &MainWindow::onNewLab);
  newLab->setShortcut(QKeySequence::New);
  auto* open = file->addAction(tr("&Open Lab…"), this, &MainWindow::onOpenLab);
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  recentMenu_->setObjectName("recentMenu");
  rebuildRecentMenu();
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  auto* view = menuBar()->addMenu(tr("&View"));
  for (int i = 0; i < PanelCount; ++i) {
    auto* a = view->addAction(titles_[i]);
    a->setObjectName(QString("showPanel%1").arg(i + 1));
    a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    a->setShortcutContext(Qt::ApplicationShortcut);
    connect(a, &QAction::triggered, this, [this, i] { showPanel(static_cast<Panel>(i)); });
  }
  view->addSeparator();
  view->addAction(logDock_->toggleViewAction());
  auto* themeMenu = view->addMenu(tr("&Theme"));
  auto* group = new QActionGroup(this);
  const QString saved = QSettings().value("ui/theme", "system").toString();
  for (auto mode : {Theme::Mode::System, Theme::Mode::Light, Theme::Mode::Dark}) {
    const QString name = Theme::modeName(mode);
    auto* a = themeMenu->addAction(name == "system" ? tr("Follow System") : name == "light" ? tr("Light") : tr("Dark"));
    a->setCheckable(true);
    a->setChecked(name == saved);
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, mode] {
      theme_->apply(mode);
      QSettings().setValue("ui/theme", Theme::modeName(mode));
    });
  }
  theme_->apply(Theme::modeFromName(saved));

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About crosslab"), this, &MainWindow::onAbout);
}

void MainWindow::showPanel(Panel panel) { sidebar_->setCurrentRow(panel); }

MainWindow::Panel MainWindow::currentPanel() const { return static_cast<Panel>(stack_->currentIndex()); }

QString MainWindow::panelTitle(Panel panel) const { return titles_.value(panel); }

bool MainWindow::requestLabClose(backends::LabSession::CloseReason reason) {
  using Reason = backends::LabSession::CloseReason;
  const QStringList concerns = session_->closeConcerns(reason);
  if (!concerns.isEmpty() && reason != Reason::Signal) {
    const bool quitting = reason == Reason::Quit;
    QMessageBox box(QMessageBox::Warning, quitting ? tr("Quit crosslab?") : tr("Close this lab?"),
                    quitting ? tr("Work in lab '%1' is still going:").arg(session_->name())
                             : tr("Work in lab '%1' is still going; opening another lab closes it:").arg(session_->name()),
                    QMessageBox::Cancel, this);
    box.setObjectName("closeGuardDialog");
    box.setInformativeText("• " + concerns.join("\n• "));
    auto* anyway = box.addButton(quitting ? tr("Quit Anyway") : tr("Close Lab Anyway"), QMessageBox::DestructiveRole);
    box.setDefaultButton(QMessageBox::Cancel);
    box.exec();
    if (box.clickedButton() != anyway) return false;
  }
  if (!session_->runCloseChecks(reason)) return false;
  if (session_->isOpen()) session_->announceClosing(reason);
  return true;
}

void MainWindow::quitFromSignal() {
  spdlog::info("signal received: closing the window");
  quittingBySignal_ = true;
  close();
}

bool MainWindow::openLab(const QString& dir) {
  if (session_->isOpen() && QDir(dir).absolutePath() != session_->path() &&
      !requestLabClose(backends::LabSession::CloseReason::SwitchLab))
    return false;
  QString error;
  if (!session_->requestOpen(dir, &error)) {
    showError(tr("Cannot open lab"), tr("%1\n\n%2").arg(QDir::toNativeSeparators(dir), error));
    return false;
  }
  RecentLabs::touch(session_->path());
  rebuildRecentMenu();
  return true;
}

bool MainWindow::createLab(const QString& dir, const QString& name) {
  if (session_->isOpen() && !requestLabClose(backends::LabSession::CloseReason::SwitchLab)) return false;
  QString error;
  if (!session_->requestCreate(dir, name, &error)) {
    showError(tr("Cannot create lab"), error);
    return false;
  }
  RecentLabs::touch(session_->path());
  rebuildRecentMenu();
  return true;
}

void MainWindow::buildDemoLab(const QString& dir, bool quick) {
  auto* runner = new DemoRunner(dir, quick, this);
  auto* view = new DemoProgressView(this);
  rightColumn_->insertWidget(0, view);
  connect(view, &DemoProgressView::cancelRequested, runner, &DemoRunner::cancel);
  connect(runner, &DemoRunner::outputLine, view, &DemoProgressView::setLastLine);
  connect(runner, &DemoRunner::stageProgress, view, &DemoProgressView::setStageProgress);
  connect(runner, &DemoRunner::stageFinished, view, &DemoProgressView::setStageFinished);
  // The lab opens as soon as it exists, so every panel shows what the demo writes into it.
  connect(runner, &DemoRunner::labCreated, this, [this, dir] { openLab(dir); });
  connect(runner, &DemoRunner::phaseBegan, this, [this](const QString& phase) {
    if (phase == "lora") showPanel(Training);  // the first LoRA run, live
  });
  connect(runner, &DemoRunner::stageProgress, this, [this](int stage, int, int) {
    // Each trained step is in the store already: show it now rather than at the next poll.
    if (stage == int(demo::DemoStage::Lora))
      if (auto* training = qobject_cast<TrainingPanel*>(stack_->widget(Training))) training->poll();
  });
  connect(runner, &DemoRunner::finished, this, [this, runner, view, dir](bool ok, const QString& reason) {
    runner->deleteLater();
    view->deleteLater();
    if (!ok) showError(tr("The demo lab is incomplete"), reason);
    // Reopened (or created, when the demo never got that far): every panel reloads the finished lab.
    if (store::LabStore::isLab(dir.toStdString())) openLab(dir);
    else createLab(dir, "demo");
  });
  runner->start();
}

void MainWindow::onNewLab() {
  const QString dir = FileDialog::newFolder(this, tr("New Lab Folder"), QDir::homePath());
  if (dir.isEmpty()) return;
  bool ok = false;
  const QString name = QInputDialog::getText(this, tr("New Lab"), tr("Lab name:"), QLineEdit::Normal,
                                             QFileInfo(dir).fileName(), &ok);
  if (ok) createLab(dir, name.isEmpty() ? QFileInfo(dir).fileName() : name);
}

void MainWindow::onOpenLab() {
  const QString dir = FileDialog::existingFolder(this, tr("Open Lab Folder"),
                                                        session_->isOpen() ? session_->path() : QDir::homePath());
  if (!dir.isEmpty()) openLab(dir);
}

void MainWindow::onAbout() {
  QMessageBox::about(this, tr("About crosslab"),
                     tr("<h3>crosslab %1</h3><p>A workbench that carries a fine-tuning lab from an empty "
                        "account to published numbers, on any silicon: venues, LoRA training, serving "
                        "and throughput benchmarks, review with every instrument, and the ledger.</p>"
                        "<p>Lab schema %2. Built with Qt %3.</p>")
                         .arg(CROSSLAB_VERSION)
                         .arg(session_->isOpen() ? QString::number(session_->schemaVersion()) : tr("—"))
                         .arg(qVersion()));
}

void MainWindow::rebuildRecentMenu() {
  // Called from a recent entry's own triggered() signal: delete old actions later, not now.
  for (auto* old : recentMenu_->actions()) {
    recentMenu_->removeAction(old);
    old->deleteLater();
  }
  const QStringList labs = RecentLabs::load();
  for (const QString& path : labs) {
    auto* a = recentMenu_->addAction(QDir::toNativeSeparators(path));
    a->setData(path);
    connect(a, &QAction::triggered, this, [this, path] { openLab(path); });
  }
  if (!labs.isEmpty()) {
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear Recent"), this, [this] {
      RecentLabs::clear();
      rebuildRecentMenu();
    });
  }
  recentMenu_->setEnabled(!labs.isEmpty());
}

void MainWindow::updateLabStatus() {
  labLabel_->setStyleSheet({});
  if (!session_->isOpen()) {
    labLabel_->setText(tr("No lab open"));
    setWindowTitle("crosslab");
    return;
  }
  labLabel_->setText(tr("Lab: %1 — %2 (schema %3)")
                         .arg(session_->name(), QDir::toNativeSeparators(session_->path()))
                         .arg(session_->schemaVersion()));
  setWindowTitle(tr("%1 — crosslab").arg(session_->name()));
}

void MainWindow::onLabFilesLost(const QString& reason) {
  labLabel_->setText(tr("Writing to lab '%1' stopped to protect it; reopen the lab (Lab → Open Recent).")
                         .arg(session_->name()));
  labLabel_->setStyleSheet("color: #d32f2f; font-weight: bold;");
  auto* box = new QMessageBox(QMessageBox::Critical, tr("Writing to the lab stopped"),
                              tr("crosslab stopped writing to lab '%1' to protect it.").arg(session_->name()),
                              QMessageBox::Ok, this);
  box->setObjectName("labFilesLostDialog");
  box->setInformativeText(reason + "\n\n" +
                          tr("Nothing that was saved before is lost. Close crosslab or open the lab again "
                             "(Lab → Open Recent) to go on."));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::showError(const QString& title, const QString& text) {
  // Non-blocking: the GUI keeps running and the previous lab stays open behind it.
  auto* box = new QMessageBox(QMessageBox::Critical, title, text, QMessageBox::Ok, this);
  box->setObjectName("errorDialog");
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::restoreSettings() {
  QSettings s;
  // A first start fits the screen (a 1024×700 laptop or VNC screen must not cut panels off).
  if (!restoreGeometry(s.value("ui/geometry").toByteArray()))
    resize(screen() ? QSize(1180, 760).boundedTo(screen()->availableGeometry().size()) : QSize(1180, 760));
  restoreState(s.value("ui/state").toByteArray());
  const int panel = s.value("ui/panel", Training).toInt();
  if (panel >= 0 && panel < PanelCount) showPanel(static_cast<Panel>(panel));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  using Reason = backends::LabSession::CloseReason;
  if (!requestLabClose(quittingBySignal_ ? Reason::Signal : Reason::Quit)) {
    event->ignore();
    return;
  }
  QSettings s;
  s.setValue("ui/geometry", saveGeometry());
  s.setValue("ui/state", saveState());
  s.setValue("ui/panel", static_cast<int>(currentPanel()));
  QMainWindow::closeEvent(event);
}

}  // namespace crosslab::widgets
