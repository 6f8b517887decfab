#pragma once
// What the engine computes with in this process, as loaded: the BLAS library that serves
// libtorch's fp32 matmul (whichever shared object defines `sgemm_`, found the way the dynamic
// linker resolves it), its build and threading, and libtorch's version and thread count.
// Debian's reference BLAS is ~30x slower than OpenBLAS for the engine's fp32 work, so the
// report says when the fast one is missing. Compiled into crosslab_engine.

#include <string>

namespace crosslab::infer {

struct EngineReport {
  std::string blasLibrary;    // real path of the object defining sgemm_; empty when none is loaded
  std::string blasName;       // "OpenBLAS", "reference BLAS", "BLIS", "MKL", "unknown"
  std::string blasConfig;     // OpenBLAS: openblas_get_config() ("OpenBLAS 0.3.21 DYNAMIC_ARCH …")
  std::string blasThreading;  // OpenBLAS: "openmp" | "pthreads" | "sequential"
  bool fastBlas = false;      // an optimised BLAS, not the reference implementation
  std::string torchVersion;   // "1.13.0"
  int threads = 0;            // libtorch's intra-op threads
};

EngineReport engineReport();

// One line for the user when the BLAS is not a fast one (empty otherwise): what was found and
// which Debian package gives the speed the figures assume.
std::string blasWarning(const EngineReport& report);

}  // namespace crosslab::infer
