#pragma once
// Outside text quoted inside an error message: one line whatever the input holds. Control
// characters become escapes (\n, \t, \x04), bytes that are not UTF-8 become \xNN, and text
// past `maxBytes` is cut with "…", so a reason stays one readable line in a terminal or a log.

#include <cstddef>
#include <string>
#include <string_view>

namespace crosslab::util {

std::string printable(std::string_view text, size_t maxBytes = 120);

}  // namespace crosslab::util
