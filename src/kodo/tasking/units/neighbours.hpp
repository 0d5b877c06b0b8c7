// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Neighbours on a collection's grid: the unit one step away in a direction, wrapping
/// around the dimensions that are periodic. A unit opens a channel with one by direction
/// (WorkUnit::open_neighbour_channel), and the runtime chooses the channel's ports, so
/// that neighbours that coincide (the left and right neighbour in a periodic ring of two
/// units) get distinct links, and a unit that is its own neighbour (a periodic dimension
/// of one unit) gets a loopback link: what it sends toward one side arrives on its own
/// channel toward the other, copied on the device.
///
/// ```
///   for (kodo::Direction d : kodo::faces)
///     if (neighbour(d, periodic)) halos_.push_back(open_neighbour_channel(stream, d, periodic));
/// ```

#include <kodo/core/index.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>

namespace kodo {

/// A step on a collection's grid: x, y and z are each -1, 0 or 1, not all 0.
struct Direction {
  /// The step along each dimension.
  ///@{
  int x = 0, y = 0, z = 0;
  ///@}
  /// Equal when every component is.
  friend bool operator==(const Direction&, const Direction&) = default;
  /// The opposite step.
  Direction operator-() const { return {-x, -y, -z}; }
};
/// Prints a direction as "(x,y,z)".
std::ostream& operator<<(std::ostream& os, const Direction& d);

/// Which dimensions of the grid wrap around (the last unit's next is the first).
struct Periodic {
  /// Whether each dimension wraps around.
  ///@{
  bool x = false, y = false, z = false;
  ///@}
};

/// The steps of common stencils, each direction after its opposite: the 6 faces, the
/// faces and the 12 edges (18), and all 26 steps (faces, edges and the 8 corners).
///@{
inline constexpr std::array<Direction, 6> faces{
    {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}}};
inline constexpr std::array<Direction, 18> faces_and_edges{{{-1, 0, 0},
                                                            {1, 0, 0},
                                                            {0, -1, 0},
                                                            {0, 1, 0},
                                                            {0, 0, -1},
                                                            {0, 0, 1},
                                                            {-1, -1, 0},
                                                            {1, 1, 0},
                                                            {-1, 1, 0},
                                                            {1, -1, 0},
                                                            {-1, 0, -1},
                                                            {1, 0, 1},
                                                            {-1, 0, 1},
                                                            {1, 0, -1},
                                                            {0, -1, -1},
                                                            {0, 1, 1},
                                                            {0, -1, 1},
                                                            {0, 1, -1}}};
inline constexpr std::array<Direction, 26> all_directions{
    {{-1, 0, 0},  {1, 0, 0},   {0, -1, 0}, {0, 1, 0},   {0, 0, -1},   {0, 0, 1},  {-1, -1, 0},
     {1, 1, 0},   {-1, 1, 0},  {1, -1, 0}, {-1, 0, -1}, {1, 0, 1},    {-1, 0, 1}, {1, 0, -1},
     {0, -1, -1}, {0, 1, 1},   {0, -1, 1}, {0, 1, -1},  {-1, -1, -1}, {1, 1, 1},  {-1, -1, 1},
     {1, 1, -1},  {-1, 1, -1}, {1, -1, 1}, {-1, 1, 1},  {1, -1, -1}}};
///@}

/// The unit one step in `direction` from `index` on a grid of `shape`, or nullopt where
/// the step leaves a dimension that is not periodic. Throws kodo::Error when `direction`
/// is not a step (a component outside -1..1, or all 0) or `index` is outside `shape`.
std::optional<Index3> neighbour_index(const Extent3& shape, const Index3& index,
                                      Direction direction, Periodic periodic);

namespace detail {
// Channel ports from here up are the runtime's: neighbour channels take 2^29 to 2^29 + 26
// (step programs' take 2^30 + tag), a unit's own channels keep below.
inline constexpr int kNeighbourPorts = 1 << 29;
// The ports the channel of unit `self` toward its neighbour `peer` in `direction` (linear
// indices) receives and sends on. Between two units, both ends use one port, named after
// the direction the end of the lower-numbered unit points in, so each pair of opposite
// channels between them is one link of its own; a unit's loopback receives on the port
// of the opposite direction and sends on its own, linking its channel toward one side
// with its channel toward the other.
struct NeighbourPorts {
  int receive, send;
};
NeighbourPorts neighbour_ports(std::int64_t self, std::int64_t peer, Direction direction);
}  // namespace detail

}  // namespace kodo
