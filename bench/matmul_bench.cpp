// matmul_bench: the fused decode step's matrix-product kernels (core/model/cpu_matmul.h) alone,
// on one thread, at the shapes decode batches hand them: Y = X Wᵀ for W [rows, k] and X of n
// rows (n = 1 the gemv, 2..15 the reducing tiles, 16+ the packed kernels). The end-to-end
// programs (batch_bench, serve + bench) swing 1.5-2x from run to run on a shared VM; a kernel
// timed alone on data it owns is steadier, so a change to a kernel is measured here first.
//
//   matmul_bench [--shapes ROWS:K:N,...] [--dtypes bf16,f32] [--repeats R] [--round none|after|on-store]
//                [--attention ROWS:LEN:HD:HEADS[:CAP],...] [--read-ahead on|off]
//
// --attention: the attention kernels instead of the products (--shapes is then not used;
// core/model/cpu_attention.h): for ROWS sequences
// of LEN cached positions each, HEADS query heads sharing one kv head of HD values, the scores
// (dot_us) and the weighted values (weighted_us), each the best of R runs, the GB/s of keys
// (or values) they read, and hashes of both results. The demo model: 16:256:32:2 is one layer
// and kv head of a 32-stream step's row group at half of a 512-token run. CAP (default LEN):
// each sequence's rows start CAP positions after the previous one's, as in the KV cache (its
// capacity). step_us (and step_gb_s, keys and values) times what the fused step does, sequence
// by sequence the scores then the weighted values. Every kernel call reads ahead what comes
// next, as the engine's do (cpu_attention.h: the next sequence's keys or values in the dot and
// weighted passes; in the step, the values after the keys, the next keys after the values);
// --read-ahead off: none, as builds before 2026-12-03 (tenth session) timed dot_us and
// weighted_us. The hashes are the same either way (CAP > LEN fills more random values, so its
// hashes differ from CAP = LEN's). 512:260:32:2:2048 is the demo model's four layers and two
// kv heads at 64 streams, mid-run, in the cache's layout. Where the engine keeps the keys in
// blocks (cpu_attention.h, keyBlocksHelp: AVX2 without AVX-512), step_blocks_us times its step
// from those (fp32 queries) and blocks_s_hash equals s_hash.
//
// --round: a bf16 model's products are rounded to bf16: `after` times the product followed by
// a roundBf16 pass over Y (what the engine did until 2026-12-03), `on-store` the product with
// roundOut (the values rounded as they are stored); the two print the same y_hash.
// One JSON line per (dtype, shape): the best of R timed runs (each long enough for ~2 GFLOP),
// GFLOP/s, and an FNV-1a hash of Y's bits: two builds that print the same hashes computed the
// same results. Defaults: the demo model's products at 16 and 32 rows (hidden 128, MLP 384,
// vocabulary 964), the peers' `tiny` LM head (128256 x 64) at 8 and 32 rows, a 4096 x 128 block.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/model/cpu_attention.h"
#include "core/model/cpu_elementwise.h"
#include "core/model/cpu_matmul.h"

using namespace crosslab::model;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
  int64_t rows, k, n;
};

uint64_t fnv(const std::vector<float>& y) {
  uint64_t h = 1469598103934665603ull;
  for (float v : y) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    for (int i = 0; i < 4; ++i) h = (h ^ ((u >> (8 * i)) & 0xFFu)) * 1099511628211ull;
  }
  return h;
}

// Fills v with normal values (their magnitudes with `positive`), in bf16 through the engine's
// own rounding.
template <class T>
void randomValues(std::mt19937& rng, std::normal_distribution<float>& normal, std::vector<T>& v,
                  bool positive = false) {
  std::vector<float> values(v.size());
  for (float& e : values) e = positive ? std::fabs(normal(rng)) : normal(rng);
  if constexpr (std::is_same_v<T, float>) v = std::move(values);
  else toBf16Bits(values.data(), v.data(), int64_t(values.size()));
}

float toF32(float v) { return v; }
float toF32(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The best of `repeats` timed runs of `iters` calls of `pass`, seconds per call, after one warm call
// (pages touched, caches filled).
template <class F>
double bestSeconds(int repeats, int64_t iters, const F& pass) {
  pass();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) pass();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / double(iters));
  }
  return best;
}

template <class T>
nlohmann::json measure(const Shape& s, int repeats, const std::string& round) {
  std::mt19937 rng(unsigned(s.rows * 31 + s.k * 7 + s.n));
  std::normal_distribution<float> normal;
  std::vector<T> w(size_t(s.rows * s.k)), x(size_t(s.n * s.k));
  randomValues(rng, normal, w);
  randomValues(rng, normal, x);
  std::vector<float> y(size_t(s.rows * s.n));
  std::vector<T> buffer;
  MatmulRows<T> rows(x.data(), s.n, s.k, buffer);
  const double flops = 2.0 * double(s.rows) * double(s.k) * double(s.n);
  // ~2 GFLOP per timed run, between 3 and 100 000 calls
  const int64_t iters = std::clamp<int64_t>(int64_t(2e9 / flops), 3, 100000);
  const auto product = [&] {
    matmulRows(w.data(), s.rows, rows, y.data(), s.rows, round == "on-store");
    if (round == "after") roundBf16(y.data(), int64_t(y.size()));
  };
  const auto timed = [&] { return bestSeconds(repeats, iters, product); };
  const double best = timed();
  // bf16: X also given as fp32 (MatmulRows::widened), as the fused step gives its activations:
  // us_x_f32 and its hash (the same bits)
  nlohmann::json xf32;
  if constexpr (!std::is_same_v<T, float>) {
    std::vector<float> xf(x.size());
    for (size_t i = 0; i < x.size(); ++i) xf[i] = toF32(x[i]);
    const std::vector<float> plain = y;
    std::vector<float> packedAvx2;
    rows.widen(xf.data(), packedAvx2);
    const double t = timed();
    std::ostringstream h;
    h << std::hex << fnv(y);
    xf32 = {{"us_x_f32", t * 1e6}, {"y_hash_x_f32", h.str()}};
    rows.widened = rows.packedAvx2 = nullptr;
    y = plain;
  }
  const bool vectorKernels = std::is_same_v<T, float> ? f32KernelsAvailable() : bf16KernelsAvailable();
  std::ostringstream hash;
  hash << std::hex << fnv(y);
  return {{"dtype", std::is_same_v<T, float> ? "f32" : "bf16"},
          {"rows", s.rows},
          {"k", s.k},
          {"n", s.n},
          {"kernel", !vectorKernels ? (vectorRowsAvailable(!std::is_same_v<T, float>) ? "avx2" : "portable") : s.n == 1 ? "gemv" : s.n < 16 ? "tiles" : "packed"},
          {"round", round},
          {"us", best * 1e6},
          {"gflop_s", flops / best / 1e9},
          {"y_hash", hash.str()},
          {"x_f32", xf32}};
}

// The fused step's attention kernels (core/model/cpu_attention.h) for one layer and kv head of
// a decode step: `rows` sequences, each with `len` cached keys and values of its own (hd
// values each, in memory one after another; a sequence's first `cap` positions after the
// previous one's, as in the KV cache), `heads` query heads reading them. bf16: bf16 queries and
// probabilities (a bf16 model's), fp32: fp32 throughout.
struct AttnShape {
  int64_t rows, len, hd, heads, cap;
};

template <class T>
nlohmann::json measureAttention(const AttnShape& a, int repeats, bool readAhead) {
  std::mt19937 rng(unsigned(a.rows * 31 + a.len * 7 + a.hd * 3 + a.heads));
  std::vector<T> k(size_t(a.rows * a.cap * a.hd)), v(k.size()), q(size_t(a.rows * a.heads * a.hd)),
      p(size_t(a.heads * a.len));
  std::normal_distribution<float> normal;
  randomValues(rng, normal, k);
  randomValues(rng, normal, v);
  randomValues(rng, normal, q);
  randomValues(rng, normal, p, true);
  std::vector<float> s(size_t(a.rows * a.heads * a.len)), o(size_t(a.rows * a.heads * a.hd));
  const int64_t sequenceBytes = a.len * a.hd * int64_t(sizeof(T));  // one sequence's keys (or values)
  const auto at = [&](const std::vector<T>& x, int64_t r) { return x.data() + r * a.cap * a.hd; };
  const auto ahead = [&](const std::vector<T>& x, int64_t r) {
    return readAhead && r < a.rows ? ReadAhead{at(x, r), sequenceBytes} : ReadAhead{};
  };
  const auto dot = [&] {
    for (int64_t r = 0; r < a.rows; ++r)
      dotRows(q.data() + r * a.heads * a.hd, a.heads, at(k, r), a.len, a.hd, s.data() + r * a.heads * a.len, a.len,
              ahead(k, r + 1));
  };
  const auto weighted = [&] {
    std::fill(o.begin(), o.end(), 0.0f);
    for (int64_t r = 0; r < a.rows; ++r)
      weightedRows(p.data(), a.heads, a.len, at(v, r), a.len, a.hd, o.data() + r * a.heads * a.hd, ahead(v, r + 1));
  };
  const auto step = [&] {  // as the fused step: per sequence the scores, then the weighted values
    std::fill(o.begin(), o.end(), 0.0f);
    for (int64_t r = 0; r < a.rows; ++r) {
      dotRows(q.data() + r * a.heads * a.hd, a.heads, at(k, r), a.len, a.hd, s.data() + r * a.heads * a.len, a.len,
              ahead(v, r));
      weightedRows(p.data(), a.heads, a.len, at(v, r), a.len, a.hd, o.data() + r * a.heads * a.hd, ahead(k, r + 1));
    }
  };
  // Where the engine keeps the keys in blocks (cpu_attention.h, keyBlocksHelp: AVX2 without the
  // AVX-512 kernels), its step scores from those: step_blocks_us, with fp32 queries as there.
  const bool blocks = keyBlocksHelp();
  const int64_t blockStride = (a.cap + 7) / 8 * 8 * a.hd;
  std::vector<T> kb(blocks ? size_t(a.rows * blockStride) : 0);
  std::vector<float> qf(q.size()), sb(s.size());
  for (size_t i = 0; i < q.size(); ++i) qf[i] = toF32(q[i]);
  if (blocks)
    for (int64_t r = 0; r < a.rows; ++r) copyToKeyBlocks(at(k, r), 0, a.len, a.hd, kb.data() + r * blockStride);
  const auto stepBlocks = [&] {
    std::fill(o.begin(), o.end(), 0.0f);
    for (int64_t r = 0; r < a.rows; ++r) {
      dotKeyBlocks(qf.data() + r * a.heads * a.hd, a.heads, kb.data() + r * blockStride, a.len, a.hd,
                   sb.data() + r * a.heads * a.len, a.len, ahead(v, r));
      const ReadAhead nextBlocks =
          readAhead && r + 1 < a.rows ? ReadAhead{kb.data() + (r + 1) * blockStride, sequenceBytes} : ReadAhead{};
      weightedRows(p.data(), a.heads, a.len, at(v, r), a.len, a.hd, o.data() + r * a.heads * a.hd, nextBlocks);
    }
  };
  const double bytes = double(a.rows * a.len * a.hd) * sizeof(T);  // K (or V) read once per pass
  const int64_t iters = std::clamp<int64_t>(int64_t(2e8 / bytes), 3, 100000);  // ~200 MB per timed run
  const auto best = [&](const auto& pass) { return bestSeconds(repeats, iters, pass); };
  const double tDot = best(dot), tWeighted = best(weighted), tStep = best(step);
  std::ostringstream sh, oh, sbh;
  sh << std::hex << fnv(s);
  oh << std::hex << fnv(o);
  const double tBlocks = blocks ? best(stepBlocks) : 0;
  sbh << std::hex << fnv(sb);
  const bool vectorKernels = std::is_same_v<T, float> ? f32KernelsAvailable() : bf16KernelsAvailable();
  return {{"kernel", vectorKernels                                  ? "attention"
          : vectorRowsAvailable(!std::is_same_v<T, float>) ? "attention-avx2"
                                                           : "attention-portable"},
          {"dtype", std::is_same_v<T, float> ? "f32" : "bf16"},
          {"rows", a.rows},
          {"len", a.len},
          {"hd", a.hd},
          {"heads", a.heads},
          {"cap", a.cap},
          {"read_ahead", readAhead},
          {"dot_us", tDot * 1e6},
          {"weighted_us", tWeighted * 1e6},
          {"dot_gb_s", bytes / tDot / 1e9},
          {"weighted_gb_s", bytes / tWeighted / 1e9},
          {"step_us", tStep * 1e6},
          {"step_gb_s", 2 * bytes / tStep / 1e9},
          {"s_hash", sh.str()},
          {"o_hash", oh.str()},
          {"step_blocks_us", blocks ? nlohmann::json(tBlocks * 1e6) : nlohmann::json()},
          {"blocks_s_hash", blocks ? nlohmann::json(sbh.str()) : nlohmann::json()}};
}

// A whole string as a number in [lo, hi], else a message naming the option.
int64_t number(const std::string& text, const std::string& what, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    throw std::invalid_argument(what + " must be a whole number from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + ", not '" + text + "'");
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Shape> shapes = {{384, 128, 16}, {384, 128, 32}, {128, 384, 32}, {128, 128, 32}, {964, 128, 32},
                               {4096, 128, 32}, {128256, 64, 8}, {128256, 64, 32}};
  std::vector<std::string> dtypes = {"bf16", "f32"};
  int repeats = 5;
  std::string round = "none";
  std::vector<AttnShape> attention;
  bool readAhead = true;
  constexpr int64_t kMaxElements = int64_t(1) << 28;  // per matrix: 1 GiB of f32
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::cout << "matmul_bench [--shapes ROWS:K:N,...] [--dtypes bf16,f32] [--repeats R]"
                     " [--round none|after|on-store] [--attention ROWS:LEN:HD:HEADS[:CAP],...]"
                     " [--read-ahead on|off]\n";
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--shapes") {
        shapes.clear();
        for (const std::string& s : split(v, ',')) {
          const auto p = split(s, ':');
          if (p.size() != 3) throw std::invalid_argument("a shape is ROWS:K:N, not '" + s + "'");
          const Shape sh{number(p[0], "ROWS", 1, kMaxElements), number(p[1], "K", 1, kMaxElements),
                         number(p[2], "N", 1, 4096)};
          if (sh.rows * sh.k > kMaxElements || sh.n * sh.k > kMaxElements || sh.rows * sh.n > kMaxElements)
            throw std::invalid_argument("shape '" + s + "' is too large (2^28 elements per matrix at most)");
          shapes.push_back(sh);
        }
        if (shapes.empty()) throw std::invalid_argument("--shapes names no shape");
      } else if (a == "--attention") {
        for (const std::string& t : split(v, ',')) {
          const auto p = split(t, ':');
          if (p.size() != 4 && p.size() != 5)
            throw std::invalid_argument("an attention shape is ROWS:LEN:HD:HEADS[:CAP], not '" + t + "'");
          const int64_t len = number(p[1], "LEN", 1, 1 << 20);
          const AttnShape sh{number(p[0], "ROWS", 1, 4096), len, number(p[2], "HD", 1, 1024),
                             number(p[3], "HEADS", 1, 64), p.size() == 5 ? number(p[4], "CAP", len, 1 << 20) : len};
          if (sh.rows * sh.cap * sh.hd > kMaxElements || sh.rows * sh.heads * sh.len > kMaxElements)
            throw std::invalid_argument("attention shape '" + t + "' is too large");
          attention.push_back(sh);
        }
        if (attention.empty()) throw std::invalid_argument("--attention names no shape");
      } else if (a == "--dtypes") {
        dtypes = split(v, ',');
        if (dtypes.empty()) throw std::invalid_argument("--dtypes names no dtype");
        for (const auto& d : dtypes)
          if (d != "bf16" && d != "f32") throw std::invalid_argument("--dtypes takes bf16 and/or f32, not '" + d + "'");
      } else if (a == "--read-ahead") {
        if (v != "on" && v != "off") throw std::invalid_argument("--read-ahead takes on or off, not '" + v + "'");
        readAhead = v == "on";
      } else if (a == "--round") {
        if (v != "none" && v != "after" && v != "on-store")
          throw std::invalid_argument("--round takes none, after or on-store, not '" + v + "'");
        round = v;
      } else if (a == "--repeats") {
        repeats = int(number(v, "--repeats", 1, 1000));
      } else {
        throw std::invalid_argument("unknown option " + a);
      }
    }
    std::cout << nlohmann::json{{"f32_kernels", f32KernelsAvailable()}, {"bf16_kernels", bf16KernelsAvailable()}}.dump()
              << std::endl;
    for (const AttnShape& s : attention)
      for (const auto& d : dtypes)
        std::cout << (d == "bf16" ? measureAttention<uint16_t>(s, repeats, readAhead)
                                   : measureAttention<float>(s, repeats, readAhead)).dump()
                  << std::endl;
    if (!attention.empty()) return 0;
    for (const Shape& s : shapes)
      for (const auto& d : dtypes)
        std::cout << (d == "bf16" ? measure<uint16_t>(s, repeats, round) : measure<float>(s, repeats, round)).dump()
                  << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "matmul_bench: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
