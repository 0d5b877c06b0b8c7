// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The reduction tree (tasking/scheduling/detail/reductions.hpp) against what other ranks send:
// partials only from children, results only from the parent, once per round, in round order.

#include "component_units.hpp"
#include "expect_error.hpp"
#include "test_runtime.hpp"

#include <kodo/comm/detail/wire.hpp>
#include <kodo/tasking/scheduling/detail/reductions.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using component_units::Tallied;
using component_units::TallyMax;
using component_units::TallySum;
using component_units::Unrelated;
using component_units::UnrelatedSum;
using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;

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
  // A round far ahead is refused before anything is kept (issue 31: 200,000 forged
  // partials grew a rank by 310 MB).
  // (Round 0 is passed up, not delivered: the window starts there.)
  const auto far = static_cast<std::int64_t>(kodo::detail::kMaxRoundsAhead);
  EXPECT_ERROR(partial(3, TallySum::id, far, value(1)),
               "reduction round 65536 of collection 0 is 65536 rounds ahead of round 0");
  EXPECT_ERROR(at.tree.contribute(at.store, 0, static_cast<std::uint64_t>(far), TallySum::id,
                                  value(1)),
               "kodo holds at most 65536 rounds");
  EXPECT_EQ(at.tree.pending_rounds(), 0u);
  partial(3, TallySum::id, far - 1, value(1));  // the last round within the window
  EXPECT_EQ(at.tree.pending_rounds(), 1u);
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
  EXPECT_ERROR(result(2, 2 + static_cast<std::int64_t>(kodo::detail::kMaxRoundsAhead), value(1)),
               "rounds ahead of round 2");
  EXPECT_TRUE(at.posted.empty());  // rank 5 has no children in a job of 7
}

}  // namespace
