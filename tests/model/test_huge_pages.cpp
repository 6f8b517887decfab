// Weights copied on load, merged adapters and the KV cache sit in memory advised for 2 MiB
// pages (core/model/huge_pages.h): the tensors hold what at::zeros / Tensor::to / the merge
// formula would, and the kernel sees the advice (the mapping's VmFlags in /proc/self/smaps
// carry "hg").
#include <ATen/ATen.h>
#include <QtTest>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/model/huge_pages.h"
#include "core/model/llama.h"
#include "core/model/safetensors.h"
#include "tests/model/tiny_llama.h"

using namespace crosslab;

namespace {

// The line starting with `field` ("VmFlags:", "Rss:") of the mapping holding `p`, or "" when none is found.
std::string smapsLine(const void* p, const std::string& field) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = addr >= lo && addr < hi;
      continue;
    }
    if (inside && line.rfind(field, 0) == 0) return line;
  }
  return "";
}

std::string vmFlagsAt(const void* p) { return smapsLine(p, "VmFlags:"); }

// The resident kilobytes of the mapping holding `p` (-1: not found).
int64_t residentKb(const void* p) {
  std::istringstream line(smapsLine(p, "Rss:"));
  std::string name;
  int64_t kb = -1;
  line >> name >> kb;
  return kb;
}

bool kernelHasThp() { return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"); }

bool advised(const at::Tensor& t) {
  const std::string flags = vmFlagsAt(t.data_ptr());
  return (" " + flags + " ").find(" hg ") != std::string::npos;
}

// One layer wide enough that its MLP weights pass 2 MiB (the plain-allocation size), bf16 in the file.
testing::TinyLlamaSpec wideLayer(int64_t intermediate) {
  testing::TinyLlamaSpec spec;
  spec.hidden = 512;
  spec.intermediate = intermediate;
  spec.layers = 1;
  spec.heads = 8;
  spec.kvHeads = 2;
  spec.bf16 = true;
  return spec;
}

}  // namespace

class TestHugePages : public QObject {
  Q_OBJECT

 private slots:
  void zerosAreZerosInAdvisedMemory() {
    const at::Tensor t = model::hugePageZeros({3, 1024, 1024}, at::kFloat);  // 12 MiB
    QCOMPARE(t.sizes(), (at::IntArrayRef{3, 1024, 1024}));
    QVERIFY(t.is_contiguous());
    QCOMPARE(t.scalar_type(), at::kFloat);
    QCOMPARE(t.abs().sum().item<double>(), 0.0);
    QCOMPARE(reinterpret_cast<uintptr_t>(t.data_ptr()) % (uintptr_t(2) << 20), uintptr_t(0));
    // Below 2 MiB: ordinary zeros.
    const at::Tensor small = model::hugePageZeros({7, 9}, at::kBFloat16);
    QCOMPARE(small.scalar_type(), at::kBFloat16);
    QCOMPARE(small.abs().sum().item<double>(), 0.0);
    if (!kernelHasThp()) QSKIP("this kernel has no transparent huge pages: the advice has nothing to act on");
    QVERIFY2(advised(t), vmFlagsAt(t.data_ptr()).c_str());
  }

  // Zeros from the kernel: a page nobody wrote is not resident (a KV cache sized for every row
  // and position costs memory as sequences fill it, and nothing to zero at startup).
  void untouchedZerosAreNotResident() {
    const int64_t mib = 64;
    {
      const at::Tensor t = model::hugePageZeros({mib, 256, 1024}, at::kFloat);
      const int64_t before = residentKb(t.data_ptr());
      QVERIFY2(before >= 0 && before < mib * 1024 / 8, std::to_string(before).c_str());  // a memset would make it 64 MiB
      t.fill_(1.0f);
      QVERIFY2(residentKb(t.data_ptr()) >= mib * 1024, std::to_string(residentKb(t.data_ptr())).c_str());
      QCOMPARE(t.sum().item<double>(), double(mib * 256 * 1024));
    }
    // Written, freed and asked for again: zeros, not the ones (a recycled mapping, kept for reuse
    // without zeroing, would fail here; glibc at this size always maps afresh, so the check is
    // against recycling in huge_pages.cpp, not against the allocator underneath).
    const at::Tensor fresh = model::hugePageZeros({mib, 256, 1024}, at::kFloat);
    QCOMPARE(fresh.abs().sum().item<double>(), 0.0);
  }

  void copyConvertsAsTo() {
    const at::Tensor src = at::randn({1024, 1536}, at::kFloat).to(at::kBFloat16);
    const at::Tensor f32 = model::hugePageCopy(src, at::kFloat);
    QVERIFY(at::equal(f32, src.to(at::kFloat)));
    const at::Tensor same = model::hugePageCopy(src, at::kBFloat16);
    QVERIFY(at::equal(same, src));
    QVERIFY(same.data_ptr() != src.data_ptr());
    if (!kernelHasThp()) QSKIP("no transparent huge pages");
    QVERIFY(advised(f32));
    QVERIFY(advised(same));
  }

  // What the engine does with it: a checkpoint's weights copied on load (and converted from the
  // file's bf16) hold the map's values, and they and a KV cache are in advised memory.
  void modelWeightsAndCacheAreAdvised() {
    QTemporaryDir dir;
    testing::writeTinyLlama(dir.path().toStdString(), wideLayer(1536));  // [1536, 512] f32 = 3 MiB
    c10::InferenceMode guard;
    auto copied = model::LlamaModel::load(dir.path().toStdString(), at::kFloat, at::kCPU, true);
    auto mapped = model::LlamaModel::load(dir.path().toStdString(), at::kBFloat16, at::kCPU, false);
    QVERIFY(at::equal(copied.weights().layers[0].wGate, mapped.weights().layers[0].wGate.to(at::kFloat)));
    model::KvCache cache = copied.makeCache(8, 1024);  // [8, 2, 1024, 64] f32 = 4 MiB per tensor
    QCOMPARE(cache.keys[0].abs().sum().item<double>(), 0.0);
    if (!kernelHasThp()) QSKIP("no transparent huge pages");
    QVERIFY(advised(copied.weights().layers[0].wGate));
    QVERIFY(advised(cache.keys[0]));
    QVERIFY(advised(cache.values[0]));
    QVERIFY(!advised(mapped.weights().layers[0].wGate));  // the file's own pages: nothing copied
  }

  // A merged adapter's weights: W + s B A in fp32 rounded once to the model's dtype (the
  // formula, computed here with ATen's own ops) bit for bit, in advised memory; the file pages
  // of a weight used from the map leave the resident set.
  void mergedWeightsAreTheFormulaInAdvisedMemory() {
    QTemporaryDir dir;
    const testing::TinyLlamaSpec spec = wideLayer(2048);  // [2048, 512]: 2 MiB in bf16 too
    const std::string base = dir.path().toStdString(), lora = base + "/lora";
    testing::writeTinyLlama(base, spec);
    testing::writeTinyLora(lora, spec, 8, 16.0, false, 3);
    c10::InferenceMode guard;
    model::SafetensorsFile adapter(lora + "/adapter_model.safetensors");
    const auto get = [&](const std::string& name) {
      const model::TensorInfo* info = adapter.find("base_model.model.model.layers.0.mlp.gate_proj." + name);
      if (!info) throw std::runtime_error("the adapter lacks " + name);
      return at::from_blob(const_cast<uint8_t*>(adapter.view(*info).data), info->shape, at::kFloat).clone();
    };
    const at::Tensor a = get("lora_A.weight"), b = get("lora_B.weight");
    const double scaling = 16.0 / 8;
    for (const auto dtype : {at::kBFloat16, at::kFloat}) {
      auto m = model::LlamaModel::load(base, dtype, at::kCPU, false);
      const at::Tensor unmerged = m.weights().layers[0].wGate;
      const at::Tensor expected = (unmerged.to(at::kFloat) + at::mm(b, a) * scaling).to(dtype);
      const int64_t fileKb = residentKb(unmerged.data_ptr()), gateKb = int64_t(unmerged.nbytes() / 1024);
      m.mergeLoraAdapter(lora);
      if (dtype == at::kBFloat16) {  // the file's own bf16 pages, read for the sum, are handed back
        QVERIFY2(fileKb >= gateKb, std::to_string(fileKb).c_str());
        const int64_t after = residentKb(unmerged.data_ptr());
        QVERIFY2(after < fileKb - gateKb / 2, (std::to_string(fileKb) + " -> " + std::to_string(after)).c_str());
      }
      const at::Tensor merged = m.weights().layers[0].wGate;
      QCOMPARE(merged.scalar_type(), dtype);
      QVERIFY(at::equal(merged, expected));
      QVERIFY(!at::equal(merged, unmerged));  // the adapter changes the weight
      if (kernelHasThp()) QVERIFY(advised(merged));
    }
  }
};

QTEST_GUILESS_MAIN(TestHugePages)
#include "test_huge_pages.moc"
