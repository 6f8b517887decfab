#include "core/model/dtype.h"

#include <array>
#include <utility>

namespace crosslab::model {
namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size;
};

constexpr std::array<DTypeRow, 15> kRows{{{DType::Bool, "BOOL", 1},
                                          {DType::U8, "U8", 1},
                                          {DType::I8, "I8", 1},
                                          {DType::I16, "I16", 2},
                                          {DType::U16, "U16", 2},
                                          {DType::F16, "F16", 2},
                                          {DType::BF16, "BF16", 2},
                                          {DType::I32, "I32", 4},
                                          {DType::U32, "U32", 4},
                                          {DType::F32, "F32", 4},
                                          {DType::F64, "F64", 8},
                                          {DType::I64, "I64", 8},
                                          {DType::U64, "U64", 8},
                                          {DType::F8_E4M3, "F8_E4M3", 1},
                                          {DType::F8_E5M2, "F8_E5M2", 1}}};

const DTypeRow& row(DType dtype) {
  for (const auto& r : kRows)
    if (r.dtype == dtype) return r;
  return kRows[0];  // unreachable: every enumerator has a row
}

}  // namespace

std::optional<DType> dtypeFromName(const std::string& name) {
  for (const auto& r : kRows)
    if (name == r.name) return r.dtype;
  return std::nullopt;
}

const char* dtypeName(DType dtype) { return row(dtype).name; }
size_t dtypeSize(DType dtype) { return row(dtype).size; }

}  // namespace crosslab::model
