// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Neighbours on a collection's grid (neighbours.hpp): indices wrap only across periodic
// dimensions, and channels opened by direction link each unit with its neighbour's
// channel in the opposite direction, whatever the grid: neighbours that coincide (a
// periodic ring of two units), a unit that is its own neighbour (a periodic dimension of
// one unit: loopback), edges and corners. Runs on any number of ranks (1, 2 and 4 under
// ctest).

#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using kodo::Direction;
using kodo::Index3;

TEST(Neighbours, IndicesWrapOnlyAcrossPeriodicDimensions) {
  const kodo::Extent3 shape{3, 2, 1};
  EXPECT_EQ(kodo::neighbour_index(shape, {0, 0, 0}, {1, 0, 0}, {}), (Index3{1, 0, 0}));
  EXPECT_EQ(kodo::neighbour_index(shape, {0, 0, 0}, {-1, 0, 0}, {}), std::nullopt);
  EXPECT_EQ(kodo::neighbour_index(shape, {0, 0, 0}, {-1, 0, 0}, {true, false, false}),
            (Index3{2, 0, 0}));
  EXPECT_EQ(kodo::neighbour_index(shape, {2, 1, 0}, {1, 1, 0}, {true, true, false}),
            (Index3{0, 0, 0}));
  // A corner step leaves the grid if any of its dimensions does.
  EXPECT_EQ(kodo::neighbour_index(shape, {2, 0, 0}, {1, 1, 0}, {false, true, true}), std::nullopt);
  // One unit across a periodic dimension is its own neighbour.
  EXPECT_EQ(kodo::neighbour_index(shape, {1, 1, 0}, {0, 0, 1}, {false, false, true}),
            (Index3{1, 1, 0}));
  EXPECT_EQ(kodo::neighbour_index(shape, {1, 1, 0}, {0, 0, 1}, {}), std::nullopt);
}

TEST(Neighbours, TheStencilsListEachDirectionOnceAfterItsOpposite) {
  std::vector<Direction> seen;
  for (std::size_t i = 0; i < kodo::all_directions.size(); ++i) {
    const Direction d = kodo::all_directions[i];
    for (const Direction& s : seen) EXPECT_FALSE(s == d) << d;
    if (i % 2 == 1) {
      EXPECT_EQ(d, -kodo::all_directions[i - 1]);
    }
    if (i < kodo::faces.size()) {
      EXPECT_EQ(d, kodo::faces[i]);
    }
    if (i < kodo::faces_and_edges.size()) {
      EXPECT_EQ(d, kodo::faces_and_edges[i]);
    }
    const int moves = (d.x != 0) + (d.y != 0) + (d.z != 0);
    EXPECT_EQ(moves, i < 6 ? 1 : i < 18 ? 2 : 3) << d;
    seen.push_back(d);
  }
}

TEST(Neighbours, AStepThatIsNoneIsRefused) {
  EXPECT_ERROR(kodo::neighbour_index({2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {}),
               "direction (0,0,0) is not a step on a grid");
  EXPECT_ERROR(kodo::neighbour_index({2, 2, 2}, {0, 0, 0}, {2, 0, 0}, {}),
               "direction (2,0,0) is not a step on a grid");
  EXPECT_ERROR(kodo::neighbour_index({2, 2, 2}, {0, 2, 0}, {1, 0, 0}, {}),
               "unit (0,2,0) is outside a grid of shape 2x2x2");
}

int code(const Direction& d) { return (d.x + 1) * 9 + (d.y + 1) * 3 + (d.z + 1); }

// Each unit sends two transfers toward every neighbour it has: its own linear index, the
// direction it sent toward, and the transfer's number; each channel must hand it what
// the unit on that side sent toward this one.
using Payload = Kokkos::View<std::int64_t[3], Kokkos::HostSpace>;
constexpr int kTransfers = 2;

class Cell : public kodo::WorkUnit<Cell> {
 public:
  explicit Cell(const kodo::UnitInit<Cell>& init) : WorkUnit(init) { links_.reserve(26); }
  std::int64_t me() const { return collection().shape().linear(index()); }

  void exchange(bool px, bool py, bool pz, int directions, bool host_staged) {
    const kodo::Periodic periodic{px, py, pz};
    const auto mode = host_staged ? kodo::CommMode::host_staged : kodo::CommMode::device;
    auto& stream = streams().communication(static_cast<std::size_t>(me()));
    for (int i = 0; i < directions; ++i) {
      const Direction d = kodo::all_directions[static_cast<std::size_t>(i)];
      const std::optional<Index3> peer = neighbour(d, periodic);
      if (!peer) continue;
      const std::size_t at = links_.size();
      Link& link = links_.emplace_back();
      link.direction = d;
      link.peer = collection().shape().linear(*peer);
      link.channel = open_neighbour_channel(stream, d, periodic, mode);
      for (int k = 0; k < kTransfers; ++k) {
        link.in[k] = Payload("in");
        link.channel.recv(link.in[k], [this, at, k] { check(links_[at], k); });
      }
      for (int k = 0; k < kTransfers; ++k) {
        link.out[k] = Payload("out");
        link.out[k](0) = me();
        link.out[k](1) = code(d);
        link.out[k](2) = k;
        link.channel.send(link.out[k], kodo::data_ready);
      }
    }
  }

  std::size_t links() const { return links_.size(); }
  int received = 0;
  std::vector<std::string> wrong;

 private:
  struct Link {
    Direction direction;
    std::int64_t peer = -1;
    kodo::Channel channel;
    Payload in[kTransfers], out[kTransfers];
  };
  void check(const Link& link, int k) {
    ++received;
    const Payload& got = link.in[k];
    if (got(0) != link.peer || got(1) != code(-link.direction) || got(2) != k)
      wrong.push_back(kodo::detail::cat("unit ", index(), " toward ", link.direction, " transfer ",
                                        k, " got (", got(0), ",", got(1), ",", got(2), ")"));
  }
  std::vector<Link> links_;
};

struct Case {
  kodo::Extent3 shape;
  kodo::Periodic periodic;
  int directions;
  std::size_t links;  // per unit (every unit has the same number in these cases)
  bool host_staged = false;
};

void exchange(const Case& c) {
  auto& rt = test_runtime();
  auto cells = kodo::Collection<Cell>::create(rt, c.shape);
  cells.broadcast_local<&Cell::exchange>(c.periodic.x, c.periodic.y, c.periodic.z, c.directions,
                                         c.host_staged);
  rt.run();
  cells.for_each_local([&](const Cell& cell) {
    EXPECT_EQ(cell.links(), c.links) << "unit " << cell.me();
    EXPECT_EQ(cell.received, kTransfers * static_cast<int>(cell.links())) << "unit " << cell.me();
    for (const std::string& w : cell.wrong) ADD_FAILURE() << w;
  });
}

TEST(Neighbours, OneUnitIsItsOwnNeighbourInEveryPeriodicDirection) {
  exchange({{1, 1, 1}, {true, true, true}, 26, 26});
}

TEST(Neighbours, ARingOfTwoUnitsHasTwoLinksBetweenThem) {
  exchange({{2, 1, 1}, {true, false, false}, 6, 2});
}

TEST(Neighbours, EdgesAndCornersOfAPeriodicGridWithAFlatDimension) {
  // y has two units (neighbours coincide), z one (its steps are loopbacks).
  exchange({{3, 2, 1}, {true, true, true}, 26, 26});
}

TEST(Neighbours, HostStagedChannelsLinkTheSameEnds) {
  exchange({{3, 2, 1}, {true, true, true}, 26, 26, true});
}

TEST(Neighbours, AGridThatDoesNotWrapHasNoNeighbourPastItsEdges) {
  // Interior unit (1,1,1) of 3x3x3 has all 26; the corner (0,0,0) has 7.
  auto& rt = test_runtime();
  auto cells = kodo::Collection<Cell>::create(rt, {3, 3, 3});
  cells.broadcast_local<&Cell::exchange>(false, false, false, 26, false);
  rt.run();
  cells.for_each_local([&](const Cell& cell) {
    const Index3 i = cell.index();
    const auto span = [](std::int64_t at) { return at == 1 ? 3 : 2; };
    const std::size_t expected = static_cast<std::size_t>(span(i.x) * span(i.y) * span(i.z) - 1);
    EXPECT_EQ(cell.links(), expected) << "unit " << cell.me();
    EXPECT_EQ(cell.received, kTransfers * static_cast<int>(expected));
    for (const std::string& w : cell.wrong) ADD_FAILURE() << w;
  });
}

class Edge : public kodo::WorkUnit<Edge> {
 public:
  explicit Edge(const kodo::UnitInit<Edge>& init) : WorkUnit(init) {}
  void try_channels() {
    auto& stream = streams().communication(0);
    missing = error_of([&] { open_neighbour_channel(stream, {-1, 0, 0}); });
    reserved = error_of([&] { open_channel(stream, {0, 0, 0}, kodo::CommMode::device, 1 << 29); });
  }
  std::string missing, reserved;
};

TEST(Neighbours, AChannelPastTheEdgeOrOnAReservedPortIsRefused) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Edge>::create(rt, {1, 1, 1});
  units.broadcast_local<&Edge::try_channels>();
  rt.run();
  units.for_each_local([](const Edge& e) {
    EXPECT_NE(e.missing.find("unit (0,0,0) has no neighbour in direction (-1,0,0) on its "
                             "collection's grid of shape 1x1x1"),
              std::string::npos)
        << e.missing;
    EXPECT_NE(e.reserved.find("ports from 2^29 up are the runtime's"), std::string::npos)
        << e.reserved;
  });
}

}  // namespace
