#pragma once
// Element types of safetensors files (names as the format spells them) and their sizes.

#include <cstddef>
#include <optional>
#include <string>

namespace crosslab::model {

enum class DType { Bool, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64, F8_E4M3, F8_E5M2 };

// "F32" -> DType::F32; nullopt for a name the format does not define.
std::optional<DType> dtypeFromName(const std::string& name);
const char* dtypeName(DType dtype);
size_t dtypeSize(DType dtype);  // bytes per element

}  // namespace crosslab::model
