// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What the message surfaces share: the units and reductions the fuzzed messages name,
// valid messages built by kodo's own serializer, and the mutations made of them.

#include "fuzz.hpp"

#include <kodo/kodo.hpp>
#include <kodo/tasking/scheduling/detail/reductions.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace fuzz {

// What an entry method got, in words: a valid call's effect is checked against it.
std::string describe_call(int a, double b, bool c);
std::string describe_call(const std::string& s, const std::vector<int>& v);
std::string describe_call(const std::vector<std::vector<double>>& v);
std::string describe_call(const Kokkos::View<double*>& v, const Kokkos::View<int**>& w);

class Fuzzed : public kodo::WorkUnit<Fuzzed> {
 public:
  explicit Fuzzed(const kodo::UnitInit<Fuzzed>& init) : WorkUnit(init) {
    held()[init.index.x] = this;
  }
  ~Fuzzed() { held().erase(index().x); }
  void values(int a, double b, bool c) { took(describe_call(a, b, c)); }
  void text(std::string s, std::vector<int> v) { took(describe_call(s, v)); }
  void nested(std::vector<std::vector<double>> v) { took(describe_call(v)); }
  void views(Kokkos::View<double*> v, Kokkos::View<int**> w) { took(describe_call(v, w)); }
  void sum(std::int64_t) { ++calls; }

  // The units of this rank, by index.
  static std::map<std::int64_t, Fuzzed*>& held() {
    static std::map<std::int64_t, Fuzzed*> units;
    return units;
  }
  std::size_t calls = 0;
  std::string last;  // what the last call got

 private:
  void took(std::string what) {
    ++calls;
    last = std::move(what);
  }
};

class Other : public kodo::WorkUnit<Other> {
 public:
  explicit Other(const kodo::UnitInit<Other>& init) : WorkUnit(init) {}
  void poke(int) {}
};

using SumReducer = kodo::detail::Reducer<Fuzzed, std::int64_t, kodo::Sum, &Fuzzed::sum>;
using OtherSum = kodo::detail::Reducer<Other, int, kodo::Sum, &Other::poke>;

// Collections of 4 Fuzzed and 2 Other units: rank r holds Fuzzed units 2r and 2r + 1.
inline constexpr std::int64_t kFuzzedUnits = 4;

// A message as UCX hands it over: the active message's header and its data.
struct Incoming {
  std::vector<std::byte> header, data;
  std::int64_t target = -1;  // a valid call: the unit it calls, and
  std::string effect;        // what that unit's entry method must get
  int connection = -1;       // the rank whose connection it came by (-1: the one it names)
  bool unnamed = false;      // it came without UCX's reply endpoint
};

template <class T>
void put(std::vector<std::byte>& b, std::size_t at, const T& v) {
  if (at + sizeof v <= b.size()) std::memcpy(b.data() + at, &v, sizeof v);
}

// Handler ids a mutation may put in a header: every kind's and some no handler has.
std::vector<std::uint64_t> handler_ids();

// A valid call of a unit of this rank, of one of Fuzzed's entry methods (views, when
// `with_views`, travel as the message's data).
Incoming valid_call(Context& c, bool with_views);
// A valid reduction partial or result from the peer.
Incoming valid_reduction(Context& c);
// A valid channel link announcement or same-node ring message from the peer.
Incoming valid_link_message(Context& c);

// Makes 1-4 random changes: fields set to edge values or other handlers' ids, bits
// flipped, bytes cut or added.
void mutate(Context& c, Incoming& m);

// Makes one field of a valid message's header wrong, or sends it over the wrong
// connection, and returns the error that must refuse it (the checks every message meets
// first: its header's size, wire.hpp's fields in their order, then its sender).
Expect spoil_header(Context& c, Incoming& m);

// Every error a message may be refused with (a mutation can make one message kind
// another, so the message surfaces share one list).
std::vector<std::string> message_refusals();

}  // namespace fuzz
