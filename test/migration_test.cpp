// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Moving units between ranks (migration.hpp): results equal to a collection that never
// moves, whatever the maps; the same records as a checkpoint; clear errors; no growth
// of links or rings over many migrations.
#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/core/settings.hpp>
#include <kodo/tasking/migration/detail/node_view_route.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kCells = 12;  // per unit, with a ghost at each end
using Cells = Kokkos::View<double*>;

void fill(const kodo::ExecutionSpace& space, const Cells& u, std::int64_t unit) {
  Kokkos::parallel_for(
      "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 0, kCells + 2),
      KOKKOS_LAMBDA(std::int64_t i) { u(i) = static_cast<double>((7 * unit + 3 * i) % 11); });
}
// One relaxation step of the cells between the ghosts; the sum of the changes.
void relax(const kodo::ExecutionSpace& space, const Cells& u, const Cells& next,
           const Kokkos::View<double, Kokkos::HostSpace>& change) {
  Kokkos::parallel_reduce(
      "relax", Kokkos::RangePolicy<kodo::ExecutionSpace>(space, 1, kCells + 1),
      KOKKOS_LAMBDA(std::int64_t i, double& sum) {
        next(i) = 0.25 * u(i - 1) + 0.5 * u(i) + 0.25 * u(i + 1) + 0.125;
        sum += Kokkos::fabs(next(i) - u(i));
      },
      change);
}

// A unit of a periodic ring of cells: each step it trades its edge cells with both
// neighbours, relaxes, and takes part in a reduction; its state is its cells, its step
// count, its history of changes and a name.
class Ring : public kodo::WorkUnit<Ring> {
 public:
  Ring(const kodo::UnitInit<Ring>& init, double scale)
      : WorkUnit(init),
        scale_(scale),
        stream_(streams().compute(init.index.x)),
        left_(open_neighbour_channel(stream_, {-1, 0, 0}, {.x = true})),
        right_(open_neighbour_channel(stream_, {1, 0, 0}, {.x = true})),
        from_left_(left_, {Cells("l0", 1), Cells("l1", 1)}),
        from_right_(right_, {Cells("r0", 1), Cells("r1", 1)}) {
    fill(stream_.space(), u_, init.shape.linear(init.index));
    name_ = "ring " + std::to_string(init.index.x);
  }

  kodo::Task advance(int steps) {
    for (int s = 0; s < steps; ++s) co_await step();
  }
  // advance(), with a balance point after every `every` steps but the last (the task
  // ends there, and goes on as a new call on the unit where it is then).
  kodo::Task advance_balancing(int steps, int every) {
    for (int s = 1; s <= steps; ++s) {
      co_await step();
      if (s % every == 0 && s < steps)
        co_await balance_point<&Ring::advance_balancing>(steps - s, every);
    }
  }

  // One step: edges traded with both neighbours, a relaxation, a reduction.
  kodo::Task step() {
    left_.send(Kokkos::subview(u_, std::make_pair(1, 2)));
    right_.send(Kokkos::subview(u_, std::make_pair(kCells, kCells + 1)));
    // Transfers count from 0 on each opening of the links: a move opens them anew.
    const std::uint64_t t = transfers_++;
    const auto left = co_await from_left_.transfer(t);
    Kokkos::deep_copy(stream_.space(), Kokkos::subview(u_, std::make_pair(0, 1)), left.view);
    const auto right = co_await from_right_.transfer(t);
    Kokkos::deep_copy(stream_.space(), Kokkos::subview(u_, std::make_pair(kCells + 1, kCells + 2)),
                      right.view);
    from_left_.release(stream_, t);
    from_right_.release(stream_, t);
    relax(stream_.space(), u_, next_, change_);
    co_await when_done(stream_);
    std::swap(u_, next_);
    const auto total = co_await all_reduce(change_() * scale_);
    history_.push_back(total.value);
    ++steps_;
  }

  // Every value the unit holds, as one number, exactly; the ghosts left out (after the
  // swap they are the other buffer's, which state() does not name, until the next trade).
  double checksum() const {
    const auto u = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, u_);
    double sum = static_cast<double>(steps_) + static_cast<double>(name_.size());
    for (std::int64_t i = 1; i <= kCells; ++i) sum += u(i) * static_cast<double>(i + 1);
    for (std::size_t k = 0; k < history_.size(); ++k)
      sum += history_[k] / static_cast<double>(k + 1);
    return sum;
  }
  std::int64_t steps() const { return steps_; }

  template <class State>
  void state(State& s) {
    s("steps", steps_);
    s("cells", u_);
    s("history", history_);
    s("name", name_);
  }

  static inline int alive = 0;  // units in existence

 private:
  double scale_;
  kodo::Stream& stream_;
  Cells u_{"u", kCells + 2}, next_{"next", kCells + 2};
  Kokkos::View<double, Kokkos::HostSpace> change_{"change"};
  kodo::Channel left_, right_;
  kodo::AwaitableRing<Cells> from_left_, from_right_;
  std::uint64_t transfers_ = 0;  // on this opening of the links
  std::int64_t steps_ = 0;
  std::vector<double> history_;
  std::string name_;
  struct Counted {
    Counted() { ++alive; }
    Counted(const Counted&) = delete;
    ~Counted() { --alive; }
  } counted_;
};

// Each unit's checksum, by linear index, on every rank.
std::vector<double> checksums(const kodo::Collection<Ring>& ring) {
  std::vector<double> all(static_cast<std::size_t>(ring.size()), 0.0);
  ring.for_each_local([&](const Ring& r) {
    all[static_cast<std::size_t>(ring.shape().linear(r.index()))] = r.checksum();
  });
  MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_DOUBLE, MPI_SUM,
                ring.runtime().comm());
  return all;
}

void advance(const kodo::Collection<Ring>& ring, int steps) {
  ring.broadcast_local<&Ring::advance>(steps);
  ring.runtime().run();
}

}  // namespace

TEST(Migration, MovedUnitsComputeWhatUnitsThatStayCompute) {
  kodo::Runtime& runtime = test_runtime();
  const int ranks = runtime.size(), rank = runtime.rank();
  const kodo::Extent3 shape{2 * ranks + 3, 1, 1};
  auto moving = kodo::Collection<Ring>::create(runtime, shape, 0.5);
  auto still = kodo::Collection<Ring>::create(runtime, shape, 0.5);
  // Maps: every unit to the next rank, all onto the last rank (the others hold none, so
  // the reduction tree's root is not rank 0), a scattered one, back to the blocks.
  std::vector<std::vector<int>> maps;
  std::vector<int> owners(static_cast<std::size_t>(shape.size()));
  for (std::size_t l = 0; l < owners.size(); ++l)
    owners[l] = moving.owner(shape.delinear(static_cast<std::int64_t>(l)));
  const std::vector<int> blocks = owners;
  for (auto& o : owners) o = (o + 1) % ranks;
  maps.push_back(owners);
  maps.emplace_back(owners.size(), ranks - 1);
  for (std::size_t l = 0; l < owners.size(); ++l)
    owners[l] = static_cast<int>((l * 7 + 3) % static_cast<std::size_t>(ranks));
  maps.push_back(owners);
  maps.push_back(blocks);
  std::uint64_t epoch = 0;
  for (const auto& map : maps) {
    advance(moving, 3);
    advance(still, 3);
    std::int64_t expected_moves = 0;
    for (std::size_t l = 0; l < map.size(); ++l)
      expected_moves += map[l] != moving.owner(shape.delinear(static_cast<std::int64_t>(l)));
    const kodo::MigrationReport report = kodo::migrate(moving, map);
    EXPECT_EQ(report.moved, expected_moves);
    if (expected_moves == 0) {  // nothing exchanged: no phase took time
      EXPECT_EQ(report.bytes, 0u);
      const kodo::MigrationPhases& p = report.phases;
      EXPECT_EQ(p.records + p.arrival_buffer + p.views + p.rebuild + p.links + p.constructors +
                    p.restores + p.release,
                0.0);
    }
    if (expected_moves > 0) ++epoch;
    EXPECT_EQ(report.epoch, epoch);
    for (std::size_t l = 0; l < map.size(); ++l)
      ASSERT_EQ(moving.owner(shape.delinear(static_cast<std::int64_t>(l))), map[l]);
    std::int64_t held = 0;
    moving.for_each_local([&](const Ring& r) {
      EXPECT_EQ(map[static_cast<std::size_t>(shape.linear(r.index()))], rank);
      EXPECT_EQ(r.rank(), rank);  // where it is now
      EXPECT_EQ(r.steps(), 3 * static_cast<std::int64_t>(&map - maps.data() + 1));
      ++held;
    });
    EXPECT_EQ(held, std::count(map.begin(), map.end(), rank));
  }
  advance(moving, 2);
  advance(still, 2);
  EXPECT_EQ(checksums(moving), checksums(still));  // bit for bit
  EXPECT_EQ(moving.reduced<double>(), still.reduced<double>());
}

TEST(Migration, AUnitMovesWithTheRecordsItsCheckpointHolds) {
  kodo::Runtime& runtime = test_runtime();
  auto ring = kodo::Collection<Ring>::create(runtime, {runtime.size() + 1, 1, 1}, 2.0);
  advance(ring, 2);
  const std::string dir = "migration_test_checkpoint";
  kodo::write_checkpoint(runtime, dir, {"migration_test", {}}, ring);
  // A unit's state in its checkpoint, after its 24-byte header, is what migration sends
  // for the unit.
  struct Bytes final : kodo::detail::RecordOutput {
    std::vector<char> held;
    void write(const void* data, std::uint64_t n) override {
      held.insert(held.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
    }
  };
  const auto saved = kodo::Checkpoint::open(runtime, dir, "migration_test");
  ring.for_each_local([&](Ring& r) {
    Bytes records;
    kodo::detail::RecordSink sink(records, runtime);
    kodo::detail::StateWriter writer(sink);
    r.state(writer);
    kodo::detail::StateSizes sizes;
    kodo::detail::StateWriter counter(sizes);
    r.state(counter);
    EXPECT_EQ(sizes.bytes, records.held.size());
    // Where the unit lies: its manifest line, "unit C L RANK OFFSET BYTES XXH3_...".
    const std::string unit_line = "unit " + std::to_string(ring.id()) + " " +
                                  std::to_string(ring.shape().linear(r.index())) + " ";
    std::ifstream manifest(saved.path() + "/manifest");
    std::string line, rank;
    std::uint64_t offset = 0, size = 0;
    while (std::getline(manifest, line))
      if (line.starts_with(unit_line))
        std::istringstream(line.substr(unit_line.size())) >> rank >> offset >> size;
    ASSERT_FALSE(rank.empty()) << "no line '" << unit_line << "...' in the manifest";
    std::ifstream file(saved.path() + "/rank-" + rank + ".state", std::ios::binary);
    const std::vector<char> all{std::istreambuf_iterator<char>(file), {}};
    ASSERT_LE(offset + size, all.size());
    const std::vector<char> bytes(all.begin() + static_cast<std::ptrdiff_t>(offset),
                                  all.begin() + static_cast<std::ptrdiff_t>(offset + size));
    ASSERT_EQ(bytes.size(), records.held.size() + 24);
    EXPECT_TRUE(std::equal(records.held.begin(), records.held.end(), bytes.begin() + 24));
  });
  // A checkpoint written after units moved restores them where they are now.
  std::vector<int> owners(static_cast<std::size_t>(ring.size()));
  for (std::size_t l = 0; l < owners.size(); ++l)
    owners[l] = static_cast<int>((l + 1) % static_cast<std::size_t>(runtime.size()));
  kodo::migrate(ring, owners);
  const auto before = checksums(ring);
  kodo::write_checkpoint(runtime, dir, {"migration_test", {}}, ring);
  advance(ring, 1);
  EXPECT_NE(checksums(ring), before);
  kodo::Checkpoint::open(runtime, dir, "migration_test").restore(ring);
  EXPECT_EQ(checksums(ring), before);
  MPI_Barrier(runtime.comm());
  if (runtime.rank() == 0) std::filesystem::remove_all(dir);
}

TEST(Migration, ManyMigrationsLeaveNoLinksOrUnitsBehind) {
  kodo::Runtime& runtime = test_runtime();
  auto ring = kodo::Collection<Ring>::create(runtime, {2 * runtime.size(), 1, 1}, 1.0);
  auto& scheduler = kodo::detail::TestAccess::scheduler(runtime);
  auto& registry = scheduler.channels();
  auto* node = scheduler.node();  // the same-node route: rings in shared memory
  const auto retired_here = [&] {
    return std::count_if(registry.retired.begin(), registry.retired.end(),
                         [&](const auto& r) { return r.collection == ring.id(); });
  };
  advance(ring, 1);
  kodo::migrate(ring, std::vector<int>(static_cast<std::size_t>(ring.size()), 0));
  advance(ring, 1);
  const std::size_t open = registry.open.size(), senders = registry.senders.size(),
                    numbers = registry.receive_numbers.size(),
                    node_ends = registry.node_ends.size();
  if (node && runtime.size() > 1) {
    EXPECT_GT(node_ends, 0u);  // the rings take the route
  }
  const std::uint64_t segment = node ? node->bytes_in_use() : 0;
  const std::size_t imports = node ? node->imports() : 0;
  const int alive = Ring::alive;
  std::vector<int> owners(static_cast<std::size_t>(ring.size()));
  for (int k = 0; k < 100; ++k) {
    for (std::size_t l = 0; l < owners.size(); ++l)
      owners[l] = static_cast<int>((l + static_cast<std::size_t>(k) + 1) %
                                   static_cast<std::size_t>(runtime.size()));
    kodo::migrate(ring, owners);
    advance(ring, 1);
  }
  kodo::migrate(ring, std::vector<int>(static_cast<std::size_t>(ring.size()), 0));
  advance(ring, 1);
  EXPECT_EQ(Ring::alive, alive);
  EXPECT_EQ(registry.open.size(), open);
  EXPECT_EQ(registry.senders.size(), senders);
  EXPECT_EQ(registry.node_ends.size(), node_ends);
  // A link keeps its number on a rank for the runtime's life: at most every link of the
  // collection ends up known to every rank, however often units move.
  EXPECT_LE(registry.receive_numbers.size(), numbers + 4 * static_cast<std::size_t>(ring.size()));
  EXPECT_EQ(retired_here(), 0);
  if (node) {
    EXPECT_EQ(node->bytes_in_use(), segment);
    EXPECT_EQ(node->imports(), imports);
  }
}

namespace {
struct Plain : kodo::WorkUnit<Plain> {
  Plain(const kodo::UnitInit<Plain>& init, std::unique_ptr<int>&) : WorkUnit(init) {}
  template <class State>
  void state(State& s) {
    s("value", value);
  }
  int value = 0;
};
}  // namespace

TEST(Migration, BadMapsAreTheSameErrorOnEveryRank) {
  kodo::Runtime& runtime = test_runtime();
  auto ring = kodo::Collection<Ring>::create(runtime, {3, 1, 1}, 1.0);
  EXPECT_ERROR(kodo::migrate(ring, {0, 0}), "names 2 owners; the collection has 3 units");
  EXPECT_ERROR(kodo::migrate(ring, {0, runtime.size(), 0}), "outside the job's");
  if (runtime.size() > 1)
    EXPECT_ERROR(kodo::migrate(ring, {0, 0, runtime.rank()}),
                 "the ranks passed different unit maps");
  // The collection is as it was.
  advance(ring, 1);
  std::unique_ptr<int> kept;
  auto plain = kodo::Collection<Plain>::create(runtime, {2, 1, 1}, kept);
  if (runtime.size() > 1) EXPECT_ERROR(kodo::migrate(plain, {1, 0}), "cannot be copied");
}

namespace {
// A unit whose constructor fails when told to (a rebuild that goes wrong).
struct Fragile : kodo::WorkUnit<Fragile> {
  explicit Fragile(const kodo::UnitInit<Fragile>& init) : WorkUnit(init) {
    if (fail) throw std::runtime_error("the constructor failed");
  }
  template <class State>
  void state(State& s) {
    s("value", value);
  }
  void touch() { ++value; }
  int value = 0;
  static inline bool fail = false;
};
}  // namespace

TEST(Migration, AFailedRebuildLeavesTheCollectionRefused) {
  kodo::Runtime& runtime = test_runtime();
  if (runtime.size() == 1) GTEST_SKIP() << "one rank: nothing moves";
  auto units = kodo::Collection<Fragile>::create(runtime, {2, 1, 1});
  Fragile::fail = true;
  EXPECT_ERROR(kodo::migrate(units, {1, 0}), "the constructor failed");
  Fragile::fail = false;
  EXPECT_ERROR(units.broadcast_local<&Fragile::touch>(), "cannot be used: a migration failed");
  EXPECT_ERROR(kodo::migrate(units, {0, 1}), "cannot be used");
}

namespace {
// A unit whose state() fails from its second walk on when told to: a migration measures a
// leaving unit's state first and writes it on the second walk.
struct SecondWalkFails : kodo::WorkUnit<SecondWalkFails> {
  explicit SecondWalkFails(const kodo::UnitInit<SecondWalkFails>& init) : WorkUnit(init) {}
  template <class State>
  void state(State& s) {
    if (fail_unit == index().x && ++walks >= 2)
      throw std::runtime_error("the state failed on its second walk");
    s("value", value);
  }
  int value = 7, walks = 0;
  static inline std::int64_t fail_unit = -1;
};
}  // namespace

// A sender whose unit fails to write sends empty chunks: its receiver, of a lower rank,
// reports the sender's reason as every rank does, not the short chunk it got.
TEST(Migration, ASendersFailureIsTheReasonOnEveryRank) {
  kodo::Runtime& runtime = test_runtime();
  if (runtime.size() == 1) GTEST_SKIP() << "one rank: nothing moves";
  auto units = kodo::Collection<SecondWalkFails>::create(runtime, {2, 1, 1});
  const int first = units.owner({0, 0, 0}), second = units.owner({1, 0, 0});
  ASSERT_LT(first, second);
  SecondWalkFails::fail_unit = 1;  // leaving `second` for `first`
  EXPECT_ERROR(kodo::migrate(units, {second, first}), "the state failed on its second walk");
  SecondWalkFails::fail_unit = -1;
}

// Balance points inside run() (WorkUnit::balance_point, kodo::balance_points).
TEST(Migration, TasksGoOnFromBalancePointsInsideRun) {
  kodo::Runtime& runtime = test_runtime();
  const int ranks = runtime.size();
  const kodo::Extent3 shape{2 * ranks + 3, 1, 1};
  auto moving = kodo::Collection<Ring>::create(runtime, shape, 0.5);
  auto still = kodo::Collection<Ring>::create(runtime, shape, 0.5);
  std::vector<int> blocks(static_cast<std::size_t>(shape.size()));
  for (std::size_t l = 0; l < blocks.size(); ++l)
    blocks[l] = moving.owner(shape.delinear(static_cast<std::int64_t>(l)));
  std::vector<kodo::BalanceReport> reports;
  kodo::balance_points(moving, kodo::rotate_balance, {.always = true},
                       [&](const kodo::BalanceReport& r) {
                         reports.push_back(r);
                         // Every unit is at the point: steps 3, 6, 9.
                         moving.for_each_local([&](const Ring& u) {
                           EXPECT_EQ(u.steps(), 3 * static_cast<std::int64_t>(reports.size()));
                         });
                       });
  // 10 steps with a point after steps 3, 6 and 9: three rotations inside one run().
  moving.broadcast_local<&Ring::advance_balancing>(10, 3);
  runtime.run();
  advance(still, 10);
  ASSERT_EQ(reports.size(), 3u);
  for (const auto& r : reports) {
    EXPECT_EQ(r.applied, ranks > 1);  // one rank: nowhere to go
    EXPECT_EQ(r.moved, ranks > 1 ? shape.size() : 0);
  }
  for (std::size_t l = 0; l < blocks.size(); ++l)
    EXPECT_EQ(moving.owner(shape.delinear(static_cast<std::int64_t>(l))), (blocks[l] + 3) % ranks);
  moving.for_each_local([&](const Ring& r) { EXPECT_EQ(r.steps(), 10); });
  EXPECT_EQ(checksums(moving), checksums(still));  // bit for bit
  EXPECT_EQ(moving.reduced<double>(), still.reduced<double>());
  // A later run() with no balance point is unchanged by them.
  advance(moving, 1);
  advance(still, 1);
  EXPECT_EQ(checksums(moving), checksums(still));
}

TEST(Migration, BalancePointsOfTwoCollectionsAndOfAMapThatMovesNothing) {
  kodo::Runtime& runtime = test_runtime();
  const int ranks = runtime.size();
  const kodo::Extent3 shape{ranks + 2, 1, 1};
  auto rotated = kodo::Collection<Ring>::create(runtime, shape, 0.5);
  auto kept = kodo::Collection<Ring>::create(runtime, shape, 0.25);
  auto still_rotated = kodo::Collection<Ring>::create(runtime, shape, 0.5);
  auto still_kept = kodo::Collection<Ring>::create(runtime, shape, 0.25);
  int rotations = 0, kept_points = 0;
  kodo::balance_points(rotated, kodo::rotate_balance, {.always = true},
                       [&](const kodo::BalanceReport&) { ++rotations; });
  // A balancer that keeps every unit where it is: nothing is rebuilt, and the units go
  // on, with their members, from the calls their tasks named.
  kodo::balance_points(
      kept, [](const kodo::BalanceInput& in) { return in.owners; }, {},
      [&](const kodo::BalanceReport& r) {
        EXPECT_FALSE(r.applied);
        ++kept_points;
      });
  // Both collections reach their points in the same waves.
  rotated.broadcast_local<&Ring::advance_balancing>(7, 2);
  kept.broadcast_local<&Ring::advance_balancing>(7, 3);
  runtime.run();
  EXPECT_EQ(rotations, 3);    // after steps 2, 4, 6
  EXPECT_EQ(kept_points, 2);  // after steps 3, 6
  advance(still_rotated, 7);
  advance(still_kept, 7);
  EXPECT_EQ(checksums(rotated), checksums(still_rotated));
  EXPECT_EQ(checksums(kept), checksums(still_kept));
  for (std::int64_t l = 0; l < shape.size(); ++l)
    EXPECT_EQ(kept.owner(shape.delinear(l)), still_kept.owner(shape.delinear(l)));
}

TEST(Migration, BalancePointsNotAllUnitsReachAreErrorsOnEveryRank) {
  kodo::Runtime& runtime = test_runtime();
  const kodo::Extent3 shape{runtime.size() + 2, 1, 1};
  // No balancer set: an error naming the call that sets one.
  auto unset = kodo::Collection<Ring>::create(runtime, shape, 1.0);
  unset.broadcast_local<&Ring::advance_balancing>(3, 1);
  EXPECT_ERROR(runtime.run(), "set no balancer for it");
  // Some units end their tasks without reaching the point.
  auto some = kodo::Collection<Ring>::create(runtime, shape, 1.0);
  kodo::balance_points(some, kodo::rotate_balance);
  some.for_each_local([&](const Ring& r) {
    if (shape.linear(r.index()) == 0)
      some[r.index()].send<&Ring::advance_balancing>(3, 1);
    else
      some[r.index()].send<&Ring::advance>(1);
  });
  EXPECT_ERROR(runtime.run(), kodo::detail::cat("1 of the ", shape.size(), " units of collection ",
                                                some.id(), " at a balance point"));
  // Nothing of those points is left for a later run() to balance.
  auto after = kodo::Collection<Ring>::create(runtime, shape, 1.0);
  advance(after, 2);
  after.for_each_local([&](const Ring& r) { EXPECT_EQ(r.steps(), 2); });
}

namespace {
// Units of three views: a device view of several of the host route's pieces (256 KiB),
// an empty one and a host view, each filled from the unit's index and a round.
struct ThreeViews : kodo::WorkUnit<ThreeViews> {
  static constexpr std::int64_t kDevice = 180'001, kHost = 40'003;
  explicit ThreeViews(const kodo::UnitInit<ThreeViews>& init) : WorkUnit(init) {}
  void fill(int round) {
    const auto d = device;
    const std::int64_t seed = index().x * 7919 + round;
    Kokkos::parallel_for(
        "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(0, kDevice),
        KOKKOS_LAMBDA(std::int64_t i) { d(i) = static_cast<std::uint32_t>(seed * 13 + i * 5); });
    Kokkos::fence();
    for (std::int64_t i = 0; i < kHost; ++i) host(i) = static_cast<double>(seed) + 0.5 * i;
  }
  bool holds(int round) const {
    const auto d = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, device);
    const std::int64_t seed = index().x * 7919 + round;
    for (std::int64_t i = 0; i < kDevice; ++i)
      if (d(i) != static_cast<std::uint32_t>(seed * 13 + i * 5)) return false;
    for (std::int64_t i = 0; i < kHost; ++i)
      if (host(i) != static_cast<double>(seed) + 0.5 * i) return false;
    return empty.extent(0) == 0;
  }
  template <class State>
  void state(State& s) {
    s("device", device);
    s("empty", empty);
    s("host", host);
  }
  Kokkos::View<std::uint32_t*> device{"device", kDevice};
  Kokkos::View<float*> empty{"empty", 0};
  Kokkos::View<double*, Kokkos::HostSpace> host{"host", kHost};
};
}  // namespace

// Several views a unit, several senders to one receiver (whose slots they share), and
// back: by the same-node route, or through UCX where KODO_CHANNELS=ucx says so.
TEST(Migration, ViewsOfEveryKindFromSeveralSendersArrive) {
  kodo::Runtime& runtime = test_runtime();
  if (runtime.size() == 1) GTEST_SKIP() << "one rank: nothing moves";
  const int ranks = runtime.size();
  auto units = kodo::Collection<ThreeViews>::create(runtime, {3 * ranks, 1, 1});
  const std::size_t n = static_cast<std::size_t>(units.size());
  std::vector<std::vector<int>> maps{std::vector<int>(n, ranks - 1), std::vector<int>(n), {}};
  for (std::size_t l = 0; l < n; ++l) maps[1][l] = static_cast<int>(l) % ranks;
  for (std::size_t l = 0; l < n; ++l) maps[2].push_back((maps[1][l] + 1) % ranks);
  for (int round = 0; round < 3; ++round) {
    units.for_each_local([&](ThreeViews& u) { u.fill(round); });
    const kodo::MigrationReport report = kodo::migrate(units, maps[round]);
    EXPECT_GT(report.moved, 0);
    EXPECT_EQ(report.view_bytes, static_cast<std::uint64_t>(report.moved) *
                                     (ThreeViews::kDevice * 4 + ThreeViews::kHost * 8));
    std::int64_t held = 0;
    units.for_each_local([&](const ThreeViews& u) {
      EXPECT_TRUE(u.holds(round)) << u.index();
      ++held;
    });
    std::int64_t total = 0;
    MPI_Allreduce(&held, &total, 1, MPI_INT64_T, MPI_SUM, runtime.comm());
    EXPECT_EQ(total, units.size());
  }
}

// A receiver's offer of slots is checked before a sender writes into what it names.
TEST(Migration, MalformedOffersOfSlotsAreRefused) {
  using kodo::detail::check_offer;
  using Offer = kodo::detail::SlotsOffer;
  const std::uint64_t room = 1 << 20;
  EXPECT_NO_THROW(check_offer(Offer{0, 256, 4}, 200, room, 1));
  EXPECT_NO_THROW(check_offer(Offer{room - 1024, 256, 4}, 256, room, 1));  // just fits
  const std::vector<Offer> bad{
      {0, 0, 1},                       // empty slots
      {0, 256, 0},                     // no slot
      {0, 256, 5},                     // more than 4
      {0, 100, 1},                     // smaller than the sender's pieces
      {room - 1023, 256, 4},           // one byte past the end
      {room + 1, 256, 1},              // starts past the end
      {0, 2, std::uint64_t{1} << 63},  // a product that wraps to 0
      {0, std::uint64_t{1} << 62, 4},  // a product that wraps
      {~std::uint64_t{0}, 256, 1},     // a place at the top
  };
  for (const Offer& o : bad)
    EXPECT_ERROR(check_offer(o, 200, room, 3), "rank 3 offered malformed slots");
}

namespace {
// A unit with one large view (several of migration's pieces on host builds, and where
// KODO_MIGRATION_PIECE_BYTES is below ~27 MiB) and a step count.
struct Large : kodo::WorkUnit<Large> {
  static constexpr std::int64_t kValues = (std::int64_t{9} << 20) / 4 * 3 + 5;  // ~27 MiB
  explicit Large(const kodo::UnitInit<Large>& init) : WorkUnit(init) {}
  void fill(int round) {
    const auto v = values;
    const std::int64_t seed = index().x * 1000003 + round;
    Kokkos::parallel_for(
        "fill", Kokkos::RangePolicy<kodo::ExecutionSpace>(0, kValues),
        KOKKOS_LAMBDA(std::int64_t i) { v(i) = static_cast<std::uint32_t>(seed * 31 + i * 7); });
    Kokkos::fence();
  }
  bool holds(int round) const {
    const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, values);
    const std::int64_t seed = index().x * 1000003 + round;
    for (std::int64_t i = 0; i < kValues; ++i)
      if (v(i) != static_cast<std::uint32_t>(seed * 31 + i * 7)) return false;
    return true;
  }
  template <class State>
  void state(State& s) {
    s("values", values);
  }
  Kokkos::View<std::uint32_t*> values{"values", kValues};
};
}  // namespace

TEST(Migration, LargeViewsTravelInPiecesThroughKeptStaging) {
  kodo::Runtime& runtime = test_runtime();
  if (runtime.size() == 1) GTEST_SKIP() << "one rank: nothing moves";
  auto units = kodo::Collection<Large>::create(runtime, {2 * runtime.size(), 1, 1});
  auto& staging = kodo::detail::TestAccess::scheduler(runtime).transport_staging();
  const std::uint64_t held_before = staging.held_bytes();
  // The ranks of a test share one node: the views take the same-node route unless
  // channels are UCX's or (host builds) a node segment set smaller has no room for the
  // route's slots; then UCX.
  const char* channels = std::getenv("KODO_CHANNELS");
  const bool ucx = channels && std::string(channels) == "ucx";
  const bool segment_set = std::getenv("KODO_NODE_SEGMENT_BYTES") != nullptr;
  std::uint64_t allocations = 0, held = 0;
  for (int round = 0; round < 3; ++round) {
    units.for_each_local([&](Large& u) { u.fill(round); });
    std::vector<int> owners(static_cast<std::size_t>(units.size()));
    for (std::size_t l = 0; l < owners.size(); ++l)
      owners[l] = (units.owner(units.shape().delinear(static_cast<std::int64_t>(l))) + 1) %
                  runtime.size();
    const kodo::MigrationReport report = kodo::migrate(units, owners);
    EXPECT_EQ(report.moved, units.size());
    // Every unit's view moved, and the report says where the time went.
    EXPECT_EQ(report.view_bytes, static_cast<std::uint64_t>(units.size()) * Large::kValues * 4);
    EXPECT_GT(report.bytes, report.view_bytes);  // the records around the views
    const kodo::MigrationPhases& p = report.phases;
    for (const double phase : {p.records, p.arrival_buffer, p.views, p.rebuild}) {
      EXPECT_GE(phase, 0.0);
      EXPECT_LE(phase, report.seconds);
    }
    EXPECT_GT(p.views, 0.0);
    EXPECT_GT(p.rebuild, 0.0);
    // rebuild's parts, each within it (on the rank where it took longest, which may not
    // be the rank where rebuild did).
    for (const double part : {p.links, p.constructors, p.restores, p.release}) {
      EXPECT_GE(part, 0.0);
      EXPECT_LE(part, report.seconds);
    }
    EXPECT_GT(p.constructors, 0.0);
    EXPECT_GT(p.restores, 0.0);
    const std::string line = kodo::describe_phases(report);
    char views[64];
    std::snprintf(views, sizeof views, "views %.1f MB in ",
                  static_cast<double>(report.view_bytes) / 1e6);
    EXPECT_NE(line.find(views), std::string::npos) << line;
    const bool on_node = report.views_on_node;
    if (ucx) {
      EXPECT_FALSE(on_node);
    } else if (!segment_set) {
      EXPECT_TRUE(on_node);
    }
    EXPECT_NE(line.find(on_node ? "(same-node route)" : "(UCX)"), std::string::npos) << line;
    units.for_each_local([&](const Large& u) { EXPECT_TRUE(u.holds(round)) << u.index(); });
    // The staging memory is allocated for this size in the first round, then kept: at
    // most 4 slots of one piece (KODO_MIGRATION_PIECE_BYTES, 32 MiB unless set) each way
    // through UCX, 4 receiving ones by the same-node route (on host builds in the node
    // segment instead); with the smaller buffers of earlier tests kept beside it, below
    // 4 times that.
    if (round == 0) {
      const std::uint64_t piece =
          std::min<std::uint64_t>(kodo::detail::bytes_setting("KODO_MIGRATION_PIECE_BYTES",
                                                              std::uint64_t{32} << 20),
                                  static_cast<std::uint64_t>(Large::kValues) * 4);
      allocations = staging.allocations();
      held = staging.held_bytes();
      if (on_node && kodo::host_build) {
        EXPECT_EQ(held, held_before);
      } else {
        EXPECT_GE(held, (on_node ? 1 : 2) * piece);  // at least a slot each way it is used
        EXPECT_LT(held, 4 * 8 * piece);
      }
    }
    EXPECT_EQ(staging.allocations(), allocations);
    EXPECT_EQ(staging.held_bytes(), held);
  }
}
