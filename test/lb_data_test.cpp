// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// LB data (lb_data.hpp): each rank's file in DARMA vt's format, a task per unit it held in
// each phase, with loads as floats.
#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {
struct Loaded : kodo::WorkUnit<Loaded> {
  explicit Loaded(const kodo::UnitInit<Loaded>& init) : WorkUnit(init) {
    set_load(init.index.x == 0 ? 3.0 : 1.0);
  }
  template <class State>
  void state(State& s) {
    s("nothing", nothing);
  }
  int nothing = 0;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(LbData, EachRankWritesItsUnitsOfEveryPhase) {
  kodo::Runtime& runtime = test_runtime();
  const int ranks = runtime.size(), rank = runtime.rank();
  auto units = kodo::Collection<Loaded>::create(runtime, {2 * ranks, 1, 1});
  const std::string dir = "lb_data_test";
  kodo::LbData lb(runtime, dir);
  std::int64_t held_first = 0;
  units.for_each_local([&](const Loaded&) { ++held_first; });
  const auto first = kodo::rebalance(units, kodo::greedy_balance);
  lb.add_phase(units, first);
  std::int64_t held_second = 0;
  units.for_each_local([&](const Loaded&) { ++held_second; });
  lb.add_phase(units, kodo::rebalance(units, kodo::refine_balance));
  lb.write();
  EXPECT_EQ(lb.phases(), 2u);
  std::ifstream file(dir + "/data." + std::to_string(rank) + ".json");
  const std::string text{std::istreambuf_iterator<char>(file), {}};
  EXPECT_EQ(text.rfind("{\"type\":\"LBDatafile\",\"metadata\":{\"type\":\"LBDatafile\",\"rank\":" +
                           std::to_string(rank) + "},\"phases\":[{\"id\":0,",
                       0),
            0u)
      << text;
  EXPECT_EQ(count(text, "\"entity\":"), static_cast<std::size_t>(held_first + held_second));
  EXPECT_EQ(count(text, "\"node\":" + std::to_string(rank) + ","),
            static_cast<std::size_t>(held_first + held_second));
  // Unit (0,0,0), created on rank 0, states 3: a float, as vt's schema takes.
  if (rank == 0) {
    EXPECT_NE(text.find("\"seq_id\":0,\"home\":0,\"migratable\":true,\"collection_id\":"),
              std::string::npos);
    EXPECT_NE(text.find("\"time\":3.0}"), std::string::npos) << text;
  }
  EXPECT_NE(text.find("{\"id\":1,\"tasks\":["), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
  MPI_Barrier(runtime.comm());
  if (rank == 0) std::filesystem::remove_all(dir);
}
