// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/units/neighbours.hpp>

#include <kodo/core/error.hpp>

namespace kodo {

std::ostream& operator<<(std::ostream& os, const Direction& d) {
  return os << '(' << d.x << ',' << d.y << ',' << d.z << ')';
}

namespace {
bool is_step(const Direction& d) {
  const auto unit = [](int c) { return c >= -1 && c <= 1; };
  return unit(d.x) && unit(d.y) && unit(d.z) && !(d.x == 0 && d.y == 0 && d.z == 0);
}
// One coordinate moved by `step`, or -1 where it leaves a grid that does not wrap.
std::int64_t moved(std::int64_t at, int step, std::int64_t extent, bool wraps) {
  const std::int64_t to = at + step;
  if (to >= 0 && to < extent) return to;
  return wraps ? (to + extent) % extent : -1;
}
}  // namespace

std::optional<Index3> neighbour_index(const Extent3& shape, const Index3& index,
                                      Direction direction, Periodic periodic) {
  if (!is_step(direction))
    throw Error(detail::cat("direction ", direction,
                            " is not a step on a grid (each of x, y, z is -1, 0 or 1, not all 0)"));
  if (!shape.contains(index))
    throw Error(detail::cat("unit ", index, " is outside a grid of shape ", shape));
  const Index3 to{moved(index.x, direction.x, shape.x, periodic.x),
                  moved(index.y, direction.y, shape.y, periodic.y),
                  moved(index.z, direction.z, shape.z, periodic.z)};
  if (to.x < 0 || to.y < 0 || to.z < 0) return std::nullopt;
  return to;
}

namespace detail {
NeighbourPorts neighbour_ports(std::int64_t self, std::int64_t peer, Direction direction) {
  const auto port = [](const Direction& d) {
    return kNeighbourPorts + (d.x + 1) * 9 + (d.y + 1) * 3 + (d.z + 1);
  };
  if (self == peer) return {port(-direction), port(direction)};
  const int shared = self < peer ? port(direction) : port(-direction);
  return {shared, shared};
}
}  // namespace detail

}  // namespace kodo
