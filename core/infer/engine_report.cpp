#include "core/infer/engine_report.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

namespace crosslab::infer {
namespace {

std::string realPath(const char* path) {
  std::error_code ec;
  const auto p = std::filesystem::canonical(path, ec);
  return ec ? std::string(path) : p.string();
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

EngineReport engineReport() {
  EngineReport r;
  r.torchVersion = TORCH_VERSION;
  r.threads = at::get_num_threads();
  // The object the global lookup gives sgemm_ to: the one libtorch's calls bind to.
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (!sgemm || !dladdr(sgemm, &info) || !info.dli_fname) {
    r.blasName = "unknown";
    return r;
  }
  r.blasLibrary = realPath(info.dli_fname);
  // Ask that object (not the process: libopenblas.so.0 may be loaded next to a reference libblas).
  void* self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  using ConfigFn = char* (*)();
  using ParallelFn = int (*)();
  auto config = self ? reinterpret_cast<ConfigFn>(dlsym(self, "openblas_get_config")) : nullptr;
  auto parallel = self ? reinterpret_cast<ParallelFn>(dlsym(self, "openblas_get_parallel")) : nullptr;
  const bool blis = self && dlsym(self, "bli_info_get_version_str");
  const bool mkl = self && dlsym(self, "mkl_get_version_string");
  if (self) dlclose(self);
  if (config) {
    r.blasName = "OpenBLAS";
    r.blasConfig = config();
    if (parallel) {
      const int p = parallel();
      r.blasThreading = p == 2 ? "openmp" : p == 1 ? "pthreads" : "sequential";
    }
    r.fastBlas = true;
  } else if (blis) {
    r.blasName = "BLIS";
    r.fastBlas = true;
  } else if (mkl) {
    r.blasName = "MKL";
    r.fastBlas = true;
  } else if (contains(r.blasLibrary, "/blas/libblas.so") || contains(r.blasLibrary, "libblas.so")) {
    r.blasName = "reference BLAS";  // Debian's libblas3 (netlib): no kernels tuned for this CPU
  } else {
    r.blasName = "unknown";
  }
  return r;
}

std::string blasWarning(const EngineReport& r) {
  if (r.fastBlas) return {};
  return "the engine's BLAS is " + r.blasName + (r.blasLibrary.empty() ? "" : " (" + r.blasLibrary + ")") +
         ": fp32 training and inference run about 30x slower than with OpenBLAS; install libopenblas0-openmp";
}

}  // namespace crosslab::infer
