#include "widgets/box_server_form.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <spdlog/spdlog.h>

#include "backends/lab_session.h"
#include "backends/runs/run_launch.h"
#include "core/store/lab_store.h"

namespace crosslab::widgets {

BoxServerForm::BoxServerForm(backends::LabSession* session, QWidget* parent)
    : QWidget(parent), session_(session), server_(new remote::RemoteServer(this)) {
  setObjectName("boxServerBox");
  box_ = new QComboBox(this);
  box_->setObjectName("serveBox");
  engine_ = new QComboBox(this);
  engine_->setObjectName("serveBoxEngine");
  engine_->addItem(tr("crosslab (crosslab-cli serve)"), "crosslab");
  engine_->addItem(tr("vLLM"), "vllm");
  engine_->addItem(tr("vLLM in Docker"), "vllm-docker");
  engine_->addItem(tr("MLX (mlx_lm.server)"), "mlx");
  model_ = new QLineEdit(this);
  model_->setObjectName("serveBoxModel");
  model_->setPlaceholderText(tr("model path on the box (or a hub id)"));
  adapters_ = new QLineEdit(this);
  adapters_->setObjectName("serveBoxAdapters");
  adapters_->setPlaceholderText(tr("NAME=PATH on the box, comma-separated"));
  loraMode_ = new QComboBox(this);
  loraMode_->setObjectName("serveBoxLoraMode");
  loraMode_->addItems({tr("runtime LoRA"), tr("merged into the weights")});
  program_ = new QLineEdit(this);
  program_->setObjectName("serveBoxProgram");
  program_->setPlaceholderText(tr("the engine's program on the box's PATH"));
  folder_ = new QLineEdit("crosslab/serve", this);
  folder_->setObjectName("serveBoxFolder");
  port_ = new QSpinBox(this);
  port_->setObjectName("serveBoxPort");
  port_->setRange(1024, 65535);
  port_->setValue(8000);
  stop_ = new QPushButton(tr("Stop server on the box"), this);
  stop_->setObjectName("stopBoxServerButton");
  stop_->setEnabled(false);
  connect(stop_, &QPushButton::clicked, server_, &remote::RemoteServer::stop);
  auto enableStop = [this] { stop_->setEnabled(server_->state() != remote::RemoteServer::State::Idle); };
  connect(server_, &remote::RemoteServer::ready, this, enableStop);
  connect(server_, &remote::RemoteServer::failed, this, enableStop);
  connect(server_, &remote::RemoteServer::stopped, this, enableStop);
  connect(server_, &remote::RemoteServer::logLine, this, [enableStop](const QString& line) {
    spdlog::info("box server: {}", line.toStdString());
    enableStop();
  });
  connect(box_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { prefill(); });

  auto* form = new QFormLayout(this);
  form->setContentsMargins(12, 0, 0, 0);
  form->addRow(tr("Box"), box_);
  form->addRow(tr("Engine"), engine_);
  form->addRow(tr("Model on the box"), model_);
  form->addRow(tr("Adapters"), adapters_);
  form->addRow(tr("LoRA"), loraMode_);
  form->addRow(tr("Program"), program_);
  form->addRow(tr("Folder / port"), [&] {
    auto* w = new QWidget(this);
    auto* l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->addWidget(folder_, 1);
    l->addWidget(port_);
    return w;
  }());
  form->addRow(stop_);
  reload();
}

void BoxServerForm::reload() {
  const QString current = box_->currentData().toString();
  box_->clear();
  boxes_.clear();
  if (!session_->isOpen()) return;
  try {
    venues::VenueStore venues(*session_->store());
    for (const auto& b : venues.boxes()) {
      if (b.host.empty()) continue;
      boxes_.push_back(b);
      box_->addItem(QString::fromStdString(b.name), QString::fromStdString(b.name));
    }
  } catch (const std::exception& e) {
    spdlog::warn("boxes: {}", e.what());
  }
  const int i = box_->findData(current);
  if (i >= 0) box_->setCurrentIndex(i);
  prefill();
}

// The weights and adapters the lab's runs left on the chosen box.
void BoxServerForm::prefill() {
  const QString name = box_->currentData().toString();
  if (name.isEmpty() || !session_->isOpen()) return;
  QStringList adapters;
  QString model;
  try {
    for (const auto& r : session_->store()->runs().list()) {
      const auto l = backends::RunLaunch::fromJson(r.launchJson);
      if (!l.onBox() || QString::fromStdString(l.box) != name) continue;
      if (model.isEmpty()) model = QString::fromStdString(l.modelOnHost);
      if (r.state == train::RunStatus::Finished)
        adapters << QString::fromStdString(r.name + "=" + l.workDir + "/" + l.outputDir);
    }
  } catch (const std::exception& e) {
    spdlog::warn("runs: {}", e.what());
  }
  if (model_->text().isEmpty()) model_->setText(model);
  if (adapters_->text().isEmpty()) adapters_->setText(adapters.join(','));
}

std::optional<remote::RemoteServer::Spec> BoxServerForm::spec(QString* error) const {
  const int i = box_->currentIndex();
  if (i < 0 || size_t(i) >= boxes_.size()) {
    *error = tr("Pick a box of the lab (add one in Venues).");
    return std::nullopt;
  }
  if (model_->text().trimmed().isEmpty()) {
    *error = tr("Name the model on the box.");
    return std::nullopt;
  }
  remote::RemoteServer::Spec s;
  s.box = boxes_[size_t(i)];
  s.serve.engine = engine_->currentData().toString().toStdString();
  s.serve.model = model_->text().trimmed().toStdString();
  s.serve.port = port_->value();
  s.serve.program = program_->text().trimmed().toStdString();
  for (const auto& item : adapters_->text().split(',', Qt::SkipEmptyParts)) {
    const int eq = item.indexOf('=');
    if (eq <= 0) {
      *error = tr("Adapters are NAME=PATH, comma-separated (got '%1').").arg(item);
      return std::nullopt;
    }
    s.serve.adapters.push_back({item.left(eq).trimmed().toStdString(), item.mid(eq + 1).trimmed().toStdString(), 0});
  }
  s.serve.mergeAdapter = loraMode_->currentIndex() == 1;
  if (s.serve.mergeAdapter && s.serve.adapters.size() != 1) {
    *error = tr("Merged serving takes exactly one adapter.");
    return std::nullopt;
  }
  s.workDir = folder_->text().trimmed().isEmpty() ? "crosslab/serve" : folder_->text().trimmed().toStdString();
  return s;
}

QString BoxServerForm::servedModelId() const {
  QString error;
  const auto s = spec(&error);
  if (!s) return {};
  if (s->serve.mergeAdapter) return QString::fromStdString(s->serve.adapters.front().name);
  if (s->serve.engine == "crosslab") {  // serve's default id: the folder's name
    QString m = QString::fromStdString(s->serve.model);
    while (m.endsWith('/')) m.chop(1);
    return m.mid(m.lastIndexOf('/') + 1);
  }
  return QString::fromStdString(s->serve.model);  // vLLM and MLX name a model by its path or hub id
}

}  // namespace crosslab::widgets
