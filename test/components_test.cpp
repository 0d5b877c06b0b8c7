// The runtime's components one at a time: the termination detector, stream draining,
// stall checks, the reduction tree's checks on what other ranks send, the handler
// registry and the received-header checks; and the scheduler refusing to wait for a
// message that nobody sent.

#include "expect_error.hpp"
#include "test_access.hpp"
#include "test_runtime.hpp"

#include <kodo/comm/wire.hpp>
#include <kodo/tasking/reductions.hpp>
#include <kodo/tasking/registry.hpp>
#include <kodo/tasking/stall_watch.hpp>
#include <kodo/tasking/stream_drain.hpp>
#include <kodo/tasking/termination.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;

#define EXPECT_ERROR(statement, text)                                              \
  {                                                                                \
    EXPECT_NE(error_of([&] { statement; }).find(text), std::string::npos) << text; \
  }

// --- messages to standard error ---------------------------------------------------------

// A packet-mode pipe keeps each write apart: one read returns one write.
TEST(PrintError, ALongMessageIsOneWriteEndingInANewline) {
  int ends[2];
  ASSERT_EQ(pipe2(ends, O_DIRECT | O_CLOEXEC), 0);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup2(ends[1], STDERR_FILENO), STDERR_FILENO);
  const std::string text = "kodo: " + std::string(300, 'x') + " end";
  kodo::print_error(text);
  kodo::print_error(text + "\n");
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(ends[1]);
  char packet[4096];
  for (int i = 0; i < 2; ++i) {
    const ssize_t n = read(ends[0], packet, sizeof packet);
    EXPECT_EQ(std::string(packet, n > 0 ? n : 0), text + "\n");
  }
  EXPECT_EQ(read(ends[0], packet, sizeof packet), 0);
  close(ends[0]);
}

// --- termination detector ------------------------------------------------------------

kodo::detail::TerminationDetector::Wave wave_of(kodo::detail::TerminationDetector& d,
                                                std::uint64_t rounds, bool dirty) {
  for (;;)
    if (auto w = d.test(rounds, dirty)) return *w;
}

TEST(TerminationDetector, QuietOnlyWhenTwoEqualWavesBalance) {
  MPI_Comm comm;
  MPI_Comm_dup(test_runtime().comm(), &comm);
  const auto ranks = static_cast<std::uint64_t>(test_runtime().size());
  {
    kodo::detail::TerminationDetector d(comm);
    d.count_sent();  // one message in flight from every rank
    auto w = wave_of(d, 0, false);
    EXPECT_EQ(w.sent, ranks);
    EXPECT_EQ(w.processed, 0u);
    EXPECT_FALSE(w.stable);
    EXPECT_FALSE(wave_of(d, 0, false).quiet());  // stable, but not balanced
    d.count_processed();
    EXPECT_FALSE(wave_of(d, 0, false).quiet());  // balanced, but changed since the last wave
    EXPECT_TRUE(wave_of(d, 0, false).quiet());
    EXPECT_FALSE(wave_of(d, 0, true).quiet());  // a rank with streams to drain
    const auto rounds = wave_of(d, 2, false);
    EXPECT_EQ(rounds.pending_rounds, 2 * ranks);
    // A message processed that nobody sent never balances: stable waves say so.
    d.count_processed();
    wave_of(d, 0, false);
    const auto over = wave_of(d, 0, false);
    EXPECT_TRUE(over.overprocessed());
    EXPECT_FALSE(over.quiet());
  }
  MPI_Comm_free(&comm);
}

// --- stream draining and stall checks ------------------------------------------------

TEST(StreamDrain, CleanOnlyWhileNothingButItsOwnMarksComplete) {
  auto& pool = test_runtime().streams();
  kodo::CompletionEngine engine;
  kodo::detail::StreamDrain drain;
  EXPECT_TRUE(drain.dirty());  // work may have been launched before
  drain.start(pool,
              [&](kodo::Stream& s, std::function<void()> f) { engine.when_done(s, std::move(f)); });
  EXPECT_FALSE(drain.dirty());
  EXPECT_EQ(engine.pending(), static_cast<std::size_t>(2 * pool.per_priority()));
  while (engine.pending() != 0) drain.poll(engine);
  EXPECT_FALSE(drain.dirty());  // only the drain's own marks completed
  engine.when_done(pool.compute(0), [] {});
  while (engine.pending() != 0) drain.poll(engine);
  EXPECT_TRUE(drain.dirty());  // other work completed: it may have launched more
}

// A source whose work never completes, on a device that has failed.
class FailedDevice final : public kodo::CompletionSource {
 public:
  std::uint64_t mark() override { return ++marks_; }
  std::uint64_t reached() const override { return 0; }
  void check_health() const override { throw kodo::Error("device fault on the test source"); }

 private:
  std::uint64_t marks_ = 0;
};

TEST(StallWatch, WorkThatStopsMovingIsCheckedForFaults) {
  FailedDevice device;
  kodo::CompletionEngine engine;
  kodo::detail::StallWatch watch(std::chrono::nanoseconds(0));
  watch.observe(0, engine);  // nothing pending: nothing to check
  engine.when_done(device, [] {});
  watch.observe(0, engine);  // starts the clock
  EXPECT_ERROR(watch.observe(0, engine), "device fault on the test source");
  watch.observe(1, engine);  // something completed: the clock stops
  watch.observe(0, engine);
}

// --- reduction tree --------------------------------------------------------------------

class Tallied : public kodo::WorkUnit<Tallied> {
 public:
  explicit Tallied(const kodo::UnitInit<Tallied>& init) : WorkUnit(init) {}
  void total(std::int64_t v) { totals.push_back(v); }
  void other(double) {}
  std::vector<std::int64_t> totals;
};
class Unrelated : public kodo::WorkUnit<Unrelated> {
 public:
  explicit Unrelated(const kodo::UnitInit<Unrelated>& init) : WorkUnit(init) {}
  void total(std::int64_t) {}
};
using TallySum = kodo::detail::Reducer<Tallied, std::int64_t, kodo::Sum, &Tallied::total>;
using TallyMax = kodo::detail::Reducer<Tallied, std::int64_t, kodo::Max, &Tallied::total>;
using UnrelatedSum = kodo::detail::Reducer<Unrelated, std::int64_t, kodo::Sum, &Unrelated::total>;

kodo::Bytes value(std::int64_t v) {
  kodo::Bytes b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}
MessageHeader header(MessageKind kind, std::uint64_t handler, std::int64_t round, int source) {
  return {kind, 0, handler, round, source};
}

// Rank `rank` of a job of 7 ranks, holding one unit of a collection of 7.
struct TreeAt {
  explicit TreeAt(int rank)
      : store(0, {7, 1, 1}, rank, 7), tree(rank, [this](int to, kodo::detail::Message&& m) {
          posted.emplace_back(to, std::move(m));
        }) {}
  kodo::detail::CollectionStore<Tallied> store;
  std::vector<std::pair<int, kodo::detail::Message>> posted;
  kodo::detail::ReductionTree tree;
};

TEST(ReductionTree, PartialsMustComeFromChildrenOncePerOpenRound) {
  TreeAt at(1);  // children 3 and 4, parent 0
  auto partial = [&](int source, std::uint64_t handler, std::int64_t round, kodo::Bytes v) {
    at.tree.on_partial(at.store, header(MessageKind::reduction_partial, handler, round, source),
                       std::move(v));
  };
  EXPECT_ERROR(partial(2, TallySum::id, 0, value(1)), "field source_rank");
  EXPECT_ERROR(partial(0, TallySum::id, 0, value(1)), "field source_rank");
  EXPECT_ERROR(partial(3, UnrelatedSum::id, 0, value(1)), "another unit type");
  EXPECT_ERROR(partial(3, kodo::detail::Entry<Tallied, &Tallied::total>::id, 0, value(1)),
               "where a reducer belongs");
  EXPECT_ERROR(partial(3, TallySum::id, 0, kodo::Bytes(3)), "carries 3 bytes");
  partial(3, TallySum::id, 0, value(10));
  EXPECT_ERROR(partial(3, TallySum::id, 0, value(10)), "second partial");
  EXPECT_ERROR(partial(4, TallyMax::id, 0, value(1)), "different types");
  EXPECT_EQ(at.tree.pending_rounds(), 1u);
  partial(4, TallySum::id, 0, value(20));
  at.tree.contribute(at.store, 0, 0, TallySum::id, value(5));
  ASSERT_EQ(at.posted.size(), 1u);  // passed up to the parent
  EXPECT_EQ(at.posted[0].first, 0);
  EXPECT_EQ(at.posted[0].second.header.kind, MessageKind::reduction_partial);
  std::int64_t sum = 0;
  std::memcpy(&sum, at.posted[0].second.payload.data(), sizeof sum);
  EXPECT_EQ(sum, 35);
  EXPECT_ERROR(partial(3, TallySum::id, 0, value(1)), "already passed on");
}

TEST(ReductionTree, ResultsMustComeFromTheParentForRoundsPassedUp) {
  TreeAt at(1);
  auto result = [&](int source, std::int64_t round) {
    at.tree.on_result(at.store, header(MessageKind::reduction_result, TallySum::id, round, source),
                      value(99), true);
  };
  EXPECT_ERROR(result(0, 0), "does not await");  // nothing passed up yet
  at.tree.on_partial(at.store, header(MessageKind::reduction_partial, TallySum::id, 0, 3),
                     value(1));
  at.tree.on_partial(at.store, header(MessageKind::reduction_partial, TallySum::id, 0, 4),
                     value(1));
  at.tree.contribute(at.store, 0, 0, TallySum::id, value(1));
  EXPECT_ERROR(result(2, 0), "not the parent");
  EXPECT_ERROR(result(0, 1), "does not await");
  EXPECT_ERROR(at.tree.on_result(at.store,
                                 header(MessageKind::reduction_result, TallyMax::id, 0, 0),
                                 value(99), true),
               "another reducer");
}

TEST(ReductionTree, AUnitContributesOncePerRound) {
  TreeAt at(1);
  at.tree.contribute(at.store, 0, 0, TallySum::id, value(1));
  EXPECT_ERROR(at.tree.contribute(at.store, 0, 0, TallySum::id, value(2)),
               "unit (1,0,0) (slot 0) contributed twice to reduction round 0 of collection 0");
  EXPECT_ERROR(at.tree.contribute(at.store, 1, 1, TallySum::id, value(2)), "names slot 1");
  for (int child : {3, 4})
    at.tree.on_partial(at.store, header(MessageKind::reduction_partial, TallySum::id, 0, child),
                       value(1));
  ASSERT_EQ(at.posted.size(), 1u);  // round 0 passed up: a late second value is refused too
  EXPECT_ERROR(at.tree.contribute(at.store, 0, 0, TallySum::id, value(2)), "contributed twice");
  EXPECT_EQ(at.tree.pending_rounds(), 0u);
}

// Results for the main program only (the bare store below has no units to call).
using ProgramSum = kodo::detail::Reducer<Tallied, std::int64_t, kodo::Sum, nullptr>;
using ProgramVector = kodo::detail::Reducer<Tallied, std::vector<std::int64_t>, kodo::Sum, nullptr>;

// Rank `rank` of a job of `ranks`, holding its share of a collection of `units`.
struct ProgramTree {
  ProgramTree(int rank, int ranks, std::int64_t units)
      : store(0, {units, 1, 1}, rank, ranks), tree(rank, [this](int to, kodo::detail::Message&& m) {
          posted.emplace_back(to, std::move(m));
        }) {
    tree.on_reduced(store, typeid(std::int64_t), [this](std::uint64_t round, const kodo::Bytes& b) {
      seen.emplace_back(round, ProgramSum::Value::load(b));
    });
  }
  // Hands the results this rank sent itself back to it, in the order they were sent.
  void deliver_own_results() {
    for (auto& [to, m] : posted)
      if (m.header.kind == MessageKind::reduction_result)
        tree.on_result(store, m.header, std::move(m.payload), false);
    posted.clear();
  }
  kodo::detail::CollectionStore<Tallied> store;
  std::vector<std::pair<int, kodo::detail::Message>> posted;
  kodo::detail::ReductionTree tree;
  std::vector<std::pair<std::uint64_t, std::int64_t>> seen;
};

TEST(ReductionTree, RoundsMayCompleteOutOfOrderAndAreDeliveredInOrder) {
  ProgramTree at(0, 1, 2);  // the root, holding both units
  EXPECT_ERROR(at.tree.reduced(at.store, typeid(std::int64_t)), "no reduction round");
  at.tree.contribute(at.store, 0, 1, ProgramSum::id, value(10));  // round 1 first
  at.tree.contribute(at.store, 1, 1, ProgramSum::id, value(20));
  at.tree.contribute(at.store, 1, 0, ProgramSum::id, value(2));
  at.tree.contribute(at.store, 0, 0, ProgramSum::id, value(1));
  ASSERT_EQ(at.posted.size(), 2u);
  EXPECT_EQ(at.posted[0].second.header.target, 1);  // round 1's result was sent first
  at.deliver_own_results();
  EXPECT_EQ(at.seen, (std::vector<std::pair<std::uint64_t, std::int64_t>>{{0, 3}, {1, 30}}));
  std::int64_t latest = 0;
  std::memcpy(&latest, at.tree.reduced(at.store, typeid(std::int64_t)).data(), sizeof latest);
  EXPECT_EQ(latest, 30);
  EXPECT_ERROR(at.tree.reduced(at.store, typeid(double)),
               "reduced<double> for collection 0: reduction round 1 has results of type long");
  // A round of another result type than the callback's is an error naming both.
  at.tree.contribute(at.store, 0, 2, ProgramVector::id, kodo::Bytes(16));
  at.tree.contribute(at.store, 1, 2, ProgramVector::id, kodo::Bytes(16));
  EXPECT_ERROR(at.deliver_own_results(),
               "on_reduced<long> for collection 0: reduction round 2 has results of type "
               "std::vector<long");
}

TEST(ReductionTree, RuntimeLengthValuesAreWholeElementsOfOneLength) {
  const auto partial = [](ProgramTree& at, int source, std::int64_t round, std::size_t bytes) {
    at.tree.on_partial(at.store,
                       header(MessageKind::reduction_partial, ProgramVector::id, round, source),
                       kodo::Bytes(bytes));
  };
  {
    ProgramTree at(1, 7, 7);  // children 3 and 4, parent 0
    EXPECT_ERROR(partial(at, 3, 0, 12), "not a whole number of the reducer's elements of 8");
    partial(at, 3, 0, 16);
    partial(at, 4, 0, 24);
    EXPECT_ERROR(at.tree.contribute(at.store, 0, 0, ProgramVector::id, kodo::Bytes(16)),
                 "a reduction of mismatched shapes: round 0 of collection 0 combines 2 element(s) "
                 "from unit (1,0,0) with 3 from the partial of rank 4");
  }
  {
    ProgramTree at(1, 7, 7);
    partial(at, 3, 0, 16);
    partial(at, 4, 0, 16);
    at.tree.contribute(at.store, 0, 0, ProgramVector::id, kodo::Bytes(16));
    ASSERT_EQ(at.posted.size(), 1u);
    EXPECT_EQ(at.posted[0].second.payload.size(), 16u);
    // The result must have the length this rank passed up.
    EXPECT_ERROR(at.tree.on_result(at.store,
                                   header(MessageKind::reduction_result, ProgramVector::id, 0, 0),
                                   kodo::Bytes(24), true),
                 "carries 24 bytes; this rank passed up 16");
  }
}

TEST(ReductionTree, RanksWithoutUnitsTakeResultsFromTheirParentOncePerRound) {
  ProgramTree at(5, 7, 2);  // units on ranks 0 and 1 only; rank 5's parent is 2
  auto result = [&](int source, std::int64_t round, kodo::Bytes v) {
    at.tree.on_result(at.store,
                      header(MessageKind::reduction_result, ProgramSum::id, round, source),
                      std::move(v), true);
  };
  EXPECT_ERROR(result(1, 0, value(4)), "not the parent");
  EXPECT_ERROR(result(2, 0, kodo::Bytes(3)), "carries 3 bytes");
  result(2, 1, value(8));  // ahead of round 0: kept
  EXPECT_ERROR(result(2, 1, value(8)), "does not await");
  EXPECT_TRUE(at.seen.empty());
  result(2, 0, value(4));
  EXPECT_EQ(at.seen, (std::vector<std::pair<std::uint64_t, std::int64_t>>{{0, 4}, {1, 8}}));
  EXPECT_ERROR(result(2, 0, value(4)), "does not await");
  EXPECT_TRUE(at.posted.empty());  // rank 5 has no children in a job of 7
}

// --- registry and headers ------------------------------------------------------------

TEST(Registry, HandlersServeOnlyTheirKindAndUnitType) {
  std::string problem;
  const auto entry = kodo::detail::Entry<Tallied, &Tallied::other>::id;
  EXPECT_NE(kodo::detail::find_handler(entry, kodo::detail::HandlerKind::entry, typeid(Tallied),
                                       problem),
            nullptr);
  EXPECT_EQ(kodo::detail::find_handler(entry, kodo::detail::HandlerKind::entry, typeid(Unrelated),
                                       problem),
            nullptr);
  EXPECT_NE(problem.find("another unit type"), std::string::npos) << problem;
  EXPECT_EQ(kodo::detail::find_handler(entry, kodo::detail::HandlerKind::reducer, typeid(Tallied),
                                       problem),
            nullptr);
  EXPECT_EQ(kodo::detail::find_handler(12345, kodo::detail::HandlerKind::entry, typeid(Tallied),
                                       problem),
            nullptr);
  EXPECT_NE(problem.find("names no entry method"), std::string::npos) << problem;
  EXPECT_EQ(kodo::detail::handler_fingerprint(), kodo::detail::handler_fingerprint());
}

TEST(WireHeader, EveryFieldIsCheckedAgainstItsRange) {
  const auto check = [](MessageHeader h) { return kodo::detail::check_received_header(h, 0, 4); };
  const MessageHeader good{MessageKind::invoke, 0, 1, 5, 2};
  EXPECT_EQ(check(good), "");
  auto with = [&](auto change) {
    MessageHeader h = good;
    change(h);
    return check(h);
  };
  EXPECT_NE(with([](auto& h) { h.kind = MessageKind::callback; }).find("local to a rank"),
            std::string::npos);
  EXPECT_NE(with([](auto& h) { h.kind = static_cast<MessageKind>(77); }).find("field kind"),
            std::string::npos);
  EXPECT_NE(with([](auto& h) { h.source_rank = 0; }).find("field source_rank"), std::string::npos);
  EXPECT_NE(with([](auto& h) { h.source_rank = 4; }).find("field source_rank"), std::string::npos);
  EXPECT_NE(with([](auto& h) { h.source_rank = -1; }).find("field source_rank"), std::string::npos);
  EXPECT_NE(with([](auto& h) { h.flags = 6; }).find("field flags"), std::string::npos);
  EXPECT_NE(with([](auto& h) {
              h.kind = MessageKind::reduction_partial;
              h.flags = kodo::detail::kHasAttachments;
            }).find("field flags"),
            std::string::npos);
  EXPECT_NE(with([](auto& h) { h.target = -3; }).find("field target"), std::string::npos);
}

// --- the scheduler against bad input ---------------------------------------------------

TEST(Scheduler, CallsFromOtherRanksAreCheckedAgainstCollectionUnitAndHandler) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Tallied>::create(rt, {3, 1, 1});
  auto others = kodo::Collection<Unrelated>::create(rt, {1, 1, 1});
  const int source = rt.size() > 1 ? (rt.rank() + 1) % rt.size() : 0;
  auto call = [&](std::uint32_t collection, std::uint64_t handler, std::int64_t target) {
    kodo::detail::Message m;
    m.header = {MessageKind::invoke, collection, handler, target, source};
    kodo::detail::Entry<Tallied, &Tallied::total>::serialize(m, std::int64_t{7});
    kodo::detail::TestAccess::dispatch_from_wire(rt, std::move(m));
  };
  const auto total = kodo::detail::Entry<Tallied, &Tallied::total>::id;
  const auto foreign = kodo::detail::Entry<Unrelated, &Unrelated::total>::id;
  EXPECT_ERROR(call(1000, total, 0), "field collection");
  EXPECT_ERROR(call(units.id(), total, 3), "field target");
  std::int64_t mine = -1;
  units.for_each_local([&](Tallied& u) { mine = units.shape().linear(u.index()); });
  if (mine < 0) EXPECT_ERROR(call(units.id(), total, 0), "does not hold");
  if (rt.rank() == 0) EXPECT_ERROR(call(others.id(), total, 0), "another unit type");
  if (mine >= 0) {
    EXPECT_ERROR(call(units.id(), foreign, mine), "another unit type");
    call(units.id(), total, mine);
    units.for_each_local([&](Tallied& u) {
      if (units.shape().linear(u.index()) == mine) {
        EXPECT_EQ(u.totals, std::vector<std::int64_t>{7});
      }
    });
  }
  rt.run();
}

TEST(Scheduler, LargeMessagesAreCheckedBeforeTheirBufferIsMade) {
  auto& rt = test_runtime();
  auto units = kodo::Collection<Tallied>::create(rt, {1, 1, 1});
  const int source = rt.size() > 1 ? (rt.rank() + 1) % rt.size() : 0;
  if (source == rt.rank()) return rt.run();  // one rank: no other rank to pose as
  const std::size_t huge = std::size_t{1} << 29;
  const auto entry = kodo::detail::Entry<Tallied, &Tallied::total>::id;
  using kodo::detail::TestAccess;
  EXPECT_ERROR(TestAccess::announce_rendezvous(rt, {MessageKind::invoke, 1000, entry, 0, source},
                                               huge),
               "field collection");
  EXPECT_ERROR(TestAccess::announce_rendezvous(
                   rt, {MessageKind::invoke, units.id(), TallySum::id, 0, source}, huge),
               (rt.rank() == 0 ? "where an entry method belongs" : "does not hold"));
  EXPECT_ERROR(TestAccess::announce_rendezvous(
                   rt, {MessageKind::reduction_partial, units.id(), TallySum::id, 0, source}, huge),
               "carries 536870912 bytes");
  EXPECT_ERROR(TestAccess::announce_rendezvous(rt,
                                               {MessageKind::invoke, units.id(), entry, 0, source},
                                               std::size_t{1} << 31),
               "bound");
  rt.run();
}

TEST(Scheduler, AMessageNobodySentEndsRunWithAnErrorNotAHang) {
  auto& rt = test_runtime();
  kodo::detail::TestAccess::inject_uncounted(rt, [] {});
  EXPECT_ERROR(rt.run(), "more than its ranks sent");
  // The counters stay off by one for the rest of the process: put them right.
  kodo::detail::TestAccess::count_sent(rt);
  rt.run();
}

}  // namespace
