// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Calls carrying views between ranks: views of several ranks, layouts and sizes arrive
// whole, sent eagerly (with the message) below KODO_EAGER_BYTES and by rendezvous
// above it; the receiving rank takes their memory from its pool, reusing an allocation
// only once no copy of the view it served is alive, and keeps the pool's idle memory
// within its bound. Multi-rank tests send every call to a unit on the next rank.

#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using kodo::detail::TestAccess;
using kodo::detail::ViewPool;

// Writes f(k) into element k of `v` in memory order (contiguous views).
template <class V, class F>
void fill(const V& v, F f) {
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t k = 0; k < h.span(); ++k)
    h.data()[k] = static_cast<typename V::non_const_value_type>(f(k));
  Kokkos::deep_copy(v, h);
}
// Whether element k of `v` in memory order is f(k) for every k.
template <class V, class F>
bool holds(const V& v, F f) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  for (std::size_t k = 0; k < h.span(); ++k)
    if (h.data()[k] != static_cast<typename V::non_const_value_type>(f(k))) return false;
  return true;
}

// --- views of several ranks, layouts and sizes ------------------------------------------

using Left1 = Kokkos::View<double*, Kokkos::LayoutLeft>;
using Right1 = Kokkos::View<std::int32_t*, Kokkos::LayoutRight>;
using Left2 = Kokkos::View<float**, Kokkos::LayoutLeft>;
using Right3 = Kokkos::View<std::int64_t***, Kokkos::LayoutRight>;
using Octets = Kokkos::View<std::uint8_t*>;
using Plane = Kokkos::View<double**>;

// The value of element k of view `which` of the call `tag` from unit `from`.
double value_of(std::int64_t from, int tag, int which, std::size_t k) {
  return static_cast<double>((from * 7 + tag * 3 + which + static_cast<std::int64_t>(k)) % 251);
}

// The calls each unit makes: a tiny one (one 24-byte view), and one with six views
// (one empty) of n elements or so each, for two values of n.
constexpr std::size_t kTiny = 3, kSmall = 16, kLarge = 4096;
std::uint64_t bytes_of_many(std::size_t n) {
  return n * sizeof(double) + n * sizeof(std::int32_t) + (n / 4 + 1) * 3 * sizeof(float) +
         2 * 3 * (n / 8 + 1) * sizeof(std::int64_t) + (n + 5);
}

class Caller : public kodo::WorkUnit<Caller> {
 public:
  explicit Caller(const kodo::UnitInit<Caller>& init) : WorkUnit(init) {}
  std::int64_t me() const { return collection().shape().linear(index()); }

  // Two units per rank: unit u calls unit u + 2, on the next rank (on one rank, itself).
  void start() {
    const auto& s = collection().shape();
    const auto peer = unit(s.delinear((me() + 2) % s.size()));
    Left1 tiny("tiny", kTiny);
    fill(tiny, [&](std::size_t k) { return value_of(me(), 0, 0, k); });
    peer.send<&Caller::tiny>(me(), tiny);
    int tag = 1;
    for (const std::size_t n : {kSmall, kLarge}) {
      Left1 a("a", n);
      Right1 b("b", n);
      Left2 c("c", n / 4 + 1, 3);
      Right3 d("d", 2, 3, n / 8 + 1);
      Octets e("e", n + 5);
      Plane z("z", 0, 5);
      fill(a, [&](std::size_t k) { return value_of(me(), tag, 0, k); });
      fill(b, [&](std::size_t k) { return value_of(me(), tag, 1, k); });
      fill(c, [&](std::size_t k) { return value_of(me(), tag, 2, k); });
      fill(d, [&](std::size_t k) { return value_of(me(), tag, 3, k); });
      fill(e, [&](std::size_t k) { return value_of(me(), tag, 4, k); });
      peer.send<&Caller::many>(me(), tag, n, a, b, c, d, e, z);
      ++tag;
    }
  }

  void tiny(std::int64_t from, Left1 a) {
    check(a.extent(0) == kTiny && holds(a, [&](std::size_t k) { return value_of(from, 0, 0, k); }),
          "tiny");
  }

  void many(std::int64_t from, int tag, std::size_t n, Left1 a, Right1 b, Left2 c, Right3 d,
            Octets e, Kokkos::View<const double**> z) {
    auto is = [&](int which) {
      return [=](std::size_t k) { return value_of(from, tag, which, k); };
    };
    const std::string call = "call " + std::to_string(tag) + " from " + std::to_string(from);
    check(a.extent(0) == n && holds(a, is(0)), call + ": LayoutLeft rank 1");
    check(b.extent(0) == n && holds(b, is(1)), call + ": LayoutRight rank 1");
    check(c.extent(0) == n / 4 + 1 && c.extent(1) == 3 && holds(c, is(2)),
          call + ": LayoutLeft rank 2");
    check(d.extent(0) == 2 && d.extent(1) == 3 && d.extent(2) == n / 8 + 1 && holds(d, is(3)),
          call + ": LayoutRight rank 3");
    check(e.extent(0) == n + 5 && holds(e, is(4)), call + ": bytes");
    check(z.extent(0) == 0 && z.extent(1) == 5, call + ": empty view's extents");
  }

  int calls = 0;
  std::vector<std::string> problems;

 private:
  void check(bool ok, const std::string& what) {
    ++calls;
    if (!ok) problems.push_back(what);
  }
};

// run() returns on every rank once the job is quiet, but not at the same instant: a
// rank that starts the next phase may send to one still leaving run(). A barrier keeps
// one phase's calls out of another's counts.
void run_alone(kodo::Runtime& rt) {
  MPI_Barrier(rt.comm());
  rt.run();
  MPI_Barrier(rt.comm());
}

void run_calls_and_check(kodo::Runtime& rt) {
  auto units = kodo::Collection<Caller>::create(rt, {2 * rt.size(), 1, 1});
  const std::uint64_t eager_before = TestAccess::eager_calls(rt);
  const std::uint64_t rendezvous_before = TestAccess::rendezvous_calls(rt);
  units.broadcast_local<&Caller::start>();
  run_alone(rt);
  units.for_each_local([&](Caller& c) {
    EXPECT_EQ(c.calls, 1 + 2 * 6) << "unit " << c.me();
    for (const auto& p : c.problems) ADD_FAILURE() << "unit " << c.me() << ": " << p;
  });
  if (rt.size() == 1) return;  // calls on one rank travel as objects
  // Each rank received its predecessor's calls: 2 units x (tiny, small, large).
  // Host views up to KODO_EAGER_BYTES travel with the call; device views (a GPU build's
  // default memory) always by rendezvous (ucx_transport.cpp).
  const std::uint64_t limit = TestAccess::eager_bytes(rt);
  constexpr bool host_views =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, Left1::memory_space>::accessible;
  std::uint64_t eager = 0;
  for (const std::uint64_t bytes :
       {kTiny * sizeof(double), bytes_of_many(kSmall), bytes_of_many(kLarge)})
    eager += host_views && bytes <= limit ? 2 : 0;
  EXPECT_EQ(TestAccess::eager_calls(rt) - eager_before, eager);
  EXPECT_EQ(TestAccess::rendezvous_calls(rt) - rendezvous_before, 6 - eager);
}

TEST(Calls, ViewsOfSeveralRanksLayoutsAndSizesArriveWhole) { run_calls_and_check(test_runtime()); }

// --- the pool: reuse only once every copy is dropped ------------------------------------

using Shorts = Kokkos::View<std::int16_t*>;  // no other test sends these

// Unit r calls unit r + 1 (on the next rank) four times, one call at a time. The
// receiver keeps the view of the first call across the next two, then keeps the third's
// and drops the first's: the pool must serve the second call elsewhere than the kept
// first view, the third from the second's (dropped) memory, and the fourth from the
// first's once it is dropped; a kept view never sees another call's data.
class Keeper : public kodo::WorkUnit<Keeper> {
 public:
  explicit Keeper(const kodo::UnitInit<Keeper>& init) : WorkUnit(init) {}
  std::int64_t me() const { return collection().shape().linear(index()); }

  void begin(std::size_t n) { call(n, 0); }
  void take(std::int64_t from, std::size_t n, int step, Shorts v) {
    Sequence& q = sequences[n];
    q.seen.push_back(v.data());
    q.intact.push_back(v.extent(0) == n && holds(v, [&](std::size_t) { return 100 + step; }));
    if (step == 0) q.first = v;
    if (step == 1 || step == 2) q.intact.push_back(holds(q.first, [](std::size_t) { return 100; }));
    if (step == 2) {
      q.third = v;
      q.first = Shorts();
    }
    if (step == 3) {
      q.intact.push_back(holds(q.third, [](std::size_t) { return 102; }));
      q.third = Shorts();
    }
    unit(collection().shape().delinear(from)).send<&Keeper::next>(n, step);
  }
  void next(std::size_t n, int step) {
    if (step < 3) call(n, step + 1);
  }

  // What one sequence of calls found, by the views' number of elements.
  struct Sequence {
    std::vector<const void*> seen;  // the memory each call's view came in
    std::vector<bool> intact;       // each view and each kept view held what it should
    Shorts first, third;            // views kept
  };
  std::map<std::size_t, Sequence> sequences;

 private:
  void call(std::size_t n, int step) {
    Shorts v("v", n);
    fill(v, [&](std::size_t) { return 100 + step; });
    const auto& s = collection().shape();
    unit(s.delinear((me() + 1) % s.size())).send<&Keeper::take>(me(), n, step, v);
  }
};

TEST(Calls, PoolReusesAViewOnlyOnceEveryCopyIsDropped) {
  auto& rt = test_runtime();
  if (rt.size() == 1) GTEST_SKIP() << "calls on one rank use no pool";
  auto units = kodo::Collection<Keeper>::create(rt, {rt.size(), 1, 1});
  ViewPool& pool = TestAccess::pool(rt);
  const std::uint64_t allocations = pool.allocations();
  // 32 B, 4 KiB and 16 KiB: eager and rendezvous under the default KODO_EAGER_BYTES;
  // each size twice.
  const std::size_t sizes[] = {16, 2048, 8192};
  for (int round = 0; round < 2; ++round) {
    for (const std::size_t n : sizes) {
      units.broadcast_local<&Keeper::begin>(n);
      run_alone(rt);
      units.for_each_local([&](Keeper& k) {
        Keeper::Sequence& q = k.sequences[n];
        ASSERT_EQ(q.seen.size(), 4u);
        EXPECT_NE(q.seen[1], q.seen[0]) << "a kept view's memory served another call";
        EXPECT_EQ(q.seen[2], q.seen[1]) << "a dropped view's memory was not reused";
        EXPECT_EQ(q.seen[3], q.seen[0]) << "memory was not reused once its last copy went";
        EXPECT_EQ(q.intact, std::vector<bool>(7, true));
        q = Keeper::Sequence();
      });
    }
  }
  // Two views alive at once per size (no other test sends these): 24 calls, and the
  // second round of every size reused what the first allocated.
  EXPECT_EQ(pool.allocations() - allocations, 2 * std::size(sizes));
}

// --- malformed calls -------------------------------------------------------------------

class Pair : public kodo::WorkUnit<Pair> {
 public:
  explicit Pair(const kodo::UnitInit<Pair>& init) : WorkUnit(init) {}
  void two(Kokkos::View<double*> a, Kokkos::View<float**> b) { calls += a.size() + b.size() > 0; }
  int calls = 0;
};

// A call is checked whole (every view against the data that came) before any view is
// taken from the pool: a bad second view leaves the pool as it was.
TEST(Calls, MalformedCallsTakeNothingFromThePool) {
  auto& rt = test_runtime();
  if (rt.size() == 1) GTEST_SKIP() << "a call from another rank needs another rank";
  using Two = kodo::detail::Entry<Pair, &Pair::two>;
  using kodo::detail::MessageHeader;
  auto units = kodo::Collection<Pair>::create(rt, {rt.size(), 1, 1});  // unit r on rank r
  kodo::detail::Message m;
  Two::serialize(m, Kokkos::View<double*>("a", 300), Kokkos::View<float**>("b", 7, 9));
  const MessageHeader h{kodo::detail::MessageKind::invoke,
                        units.id(),
                        Two::id,
                        rt.rank(),
                        (rt.rank() + 1) % rt.size(),
                        kodo::detail::kHasAttachments};
  std::vector<std::byte> header(sizeof h), data;
  std::memcpy(header.data(), &h, sizeof h);
  header.insert(header.end(), m.payload.begin(), m.payload.end());
  for (const auto& a : m.attachments) {  // the views' bytes as they travel (from the device)
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    const std::size_t at = data.size(), n = a.segment.bytes;
    data.resize(at + n);
    Kokkos::deep_copy(Kokkos::View<std::byte*, Kokkos::HostSpace, Unmanaged>(data.data() + at, n),
                      Kokkos::View<const std::byte*, Left1::memory_space, Unmanaged>(
                          static_cast<const std::byte*>(a.segment.data), n));
  }
  ViewPool& pool = TestAccess::pool(rt);
  const std::uint64_t allocations = pool.allocations(), held = pool.held_bytes();
  auto short_data = data;
  short_data.resize(data.size() - 4);
  EXPECT_ERROR(TestAccess::receive(rt, header, short_data), "exceeds");
  auto long_data = data;
  long_data.resize(data.size() + 8);
  EXPECT_ERROR(TestAccess::receive(rt, header, long_data), "its arguments describe");
  auto huge = header;
  const std::uint64_t extent = std::uint64_t{1} << 40;
  std::memcpy(huge.data() + sizeof h + 8, &extent, sizeof extent);  // b's first extent
  EXPECT_ERROR(TestAccess::receive(rt, huge, data), "bound");
  EXPECT_EQ(pool.allocations(), allocations);
  EXPECT_EQ(pool.held_bytes(), held);
  // The call itself is accepted, its views from the pool. (Not on a GPU build: its device
  // views never travel eagerly, and data that did would land through a stream copy
  // after this returns, outside the counts this test keeps.)
  if constexpr (kodo::host_build) {
    EXPECT_EQ(TestAccess::receive(rt, header, data), 1);
    units.for_each_local([](Pair& p) { EXPECT_EQ(p.calls, 1); });
  }
  rt.run();
}

// --- the pool on its own ----------------------------------------------------------------

TEST(ViewPool, RankOneViewsComeFromSizeClasses) {
  EXPECT_EQ(ViewPool::class_elements(1, 8), 32u);     // 256 B at least
  EXPECT_EQ(ViewPool::class_elements(32, 8), 32u);    // 256 B
  EXPECT_EQ(ViewPool::class_elements(33, 8), 40u);    // 264 B -> 320 B
  EXPECT_EQ(ViewPool::class_elements(100, 8), 112u);  // 800 B -> 896 B
  EXPECT_EQ(ViewPool::class_elements(4096, 8), 4096u);
  EXPECT_EQ(ViewPool::class_elements(4097, 8), 5120u);  // a quarter step above 32 KiB
  EXPECT_EQ(ViewPool::class_elements(100, 3), 107u);    // 300 B -> 320 B
  for (std::size_t n = 1; n < 5000; n += 7) {
    const std::size_t c = ViewPool::class_elements(n, 4);
    EXPECT_GE(c, n);
    EXPECT_LE(c * 4, std::max<std::size_t>(256, n * 4 * 5 / 4 + 4)) << n;  // <= 25% over
  }
}

TEST(ViewPool, ReusesOnlyAllocationsNoViewOutsideItHolds) {
  ViewPool pool(std::uint64_t{1} << 20);
  using Doubles = Kokkos::View<double*>;
  auto a = pool.take<Doubles>({100});
  const double* first = a.data();
  auto b = pool.take<Doubles>({100});
  EXPECT_NE(b.data(), first);
  a = Doubles();
  auto c = pool.take<Doubles>({110});  // the same size class (896 B): the first allocation
  EXPECT_EQ(c.data(), first);
  EXPECT_EQ(c.extent(0), 110u);
  EXPECT_EQ(pool.allocations(), 2u);
  // A copy as an entry method's parameter type keeps the allocation in use.
  Kokkos::View<const double*> held = c;
  c = Doubles();
  auto d = pool.take<Doubles>({100});
  EXPECT_NE(d.data(), first);
  EXPECT_NE(d.data(), b.data());
  held = {};
  EXPECT_EQ(pool.take<Doubles>({112}).data(), first);

  // Other ranks: exact extents.
  using Grid = Kokkos::View<int**>;
  auto g = pool.take<Grid>({3, 4});
  const int* grid = g.data();
  g = Grid();
  EXPECT_EQ(pool.take<Grid>({3, 4}).data(), grid);
  auto other = pool.take<Grid>({4, 3});
  EXPECT_NE(other.data(), grid);
  EXPECT_EQ(other.extent(0), 4u);
  EXPECT_EQ(other.extent(1), 3u);
}

TEST(ViewPool, KeepsIdleMemoryWithinItsBound) {
  constexpr std::uint64_t bound = 16384;
  ViewPool pool(bound);
  std::mt19937 rng(20260101);
  std::vector<Kokkos::View<char*>> kept;
  std::uint64_t kept_bytes = 0;
  // Whenever the pool has just allocated: idle memory within the bound, and all of it
  // within the bound plus what is in use.
  auto check = [&](std::uint64_t allocations_before, std::uint64_t in_use) {
    if (pool.allocations() == allocations_before) return;
    EXPECT_LE(pool.idle_bytes(), bound);
    EXPECT_LE(pool.held_bytes(), bound + in_use);
  };
  for (int i = 0; i < 400; ++i) {
    const std::size_t n = 1 + rng() % 6000;
    std::uint64_t before = pool.allocations();
    auto v = pool.take<Kokkos::View<char*>>({n});
    ASSERT_EQ(v.extent(0), n);
    const std::uint64_t v_bytes = ViewPool::class_elements(n, 1);
    check(before, kept_bytes + v_bytes);
    before = pool.allocations();
    auto g = pool.take<Kokkos::View<short**>>({1 + rng() % 40, 3});
    check(before, kept_bytes + v_bytes + g.size() * sizeof(short));
    if (i % 50 == 0) {
      kept.push_back(v);
      kept_bytes += v_bytes;
    }
  }
  EXPECT_LT(pool.allocations(), 800u);  // some reuse
  kept.clear();
  pool.clear();
  EXPECT_EQ(pool.held_bytes(), 0u);
}

}  // namespace
