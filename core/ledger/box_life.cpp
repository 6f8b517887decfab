#include "core/ledger/box_life.h"

#include <array>
#include <utility>

namespace crosslab::ledger {
namespace {

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text) {
  for (const auto& [value, name] : table)
    if (name == text) return value;
  return std::nullopt;
}

template <typename E, size_t N>
std::string_view nameOf(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

constexpr std::array<std::pair<WorkKind, std::string_view>, 4> kKinds{
    {{WorkKind::Train, "train"}, {WorkKind::Bench, "bench"}, {WorkKind::Eval, "eval"}, {WorkKind::Serve, "serve"}}};
constexpr std::array<std::pair<WorkStatus, std::string_view>, 5> kStatuses{{{WorkStatus::Running, "running"},
                                                                            {WorkStatus::Finished, "finished"},
                                                                            {WorkStatus::Failed, "failed"},
                                                                            {WorkStatus::Stalled, "stalled"},
                                                                            {WorkStatus::Stopped, "stopped"}}};
constexpr std::array<std::pair<Direction, std::string_view>, 2> kDirections{
    {{Direction::Push, "push"}, {Direction::Pull, "pull"}}};

}  // namespace

std::string_view toString(WorkKind kind) { return nameOf(kKinds, kind); }
std::string_view toString(WorkStatus status) { return nameOf(kStatuses, status); }
std::string_view toString(Direction direction) { return nameOf(kDirections, direction); }
std::optional<WorkKind> workKindFrom(std::string_view text) { return lookup(kKinds, text); }
std::optional<WorkStatus> workStatusFrom(std::string_view text) { return lookup(kStatuses, text); }
std::optional<Direction> directionFrom(std::string_view text) { return lookup(kDirections, text); }

std::optional<double> Transfer::mbPerSecond() const {
  const double seconds = end - start;
  if (seconds <= 0) return std::nullopt;
  return static_cast<double>(bytes) / 1e6 / seconds;
}

}  // namespace crosslab::ledger
