#pragma once
// A venue's timeline as a file, for the milestones a provider does not expose (account
// created, key minted, …): JSON Lines ({"milestone": NAME, "at": ISO-8601 UTC, "note":
// …}), the JSON `crosslab-cli venues timeline --json` prints ({"milestones": […]} or a
// bare array), or text lines "ISO NAME" / "ISO,NAME" (what `venues timeline` prints, a
// spreadsheet's CSV). Blank lines and lines starting with '#' are skipped.

#include <string>
#include <vector>

#include "core/venues/meter.h"

namespace crosslab::venues {

// All or nothing: the first line that is not a milestone throws std::invalid_argument
// naming its line number and why. Every milestone read has source "imported".
std::vector<Milestone> parseTimelineFile(const std::string& text);

}  // namespace crosslab::venues
