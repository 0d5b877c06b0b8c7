#pragma once
// What the message surfaces share: the units and reductions the fuzzed messages name,
// valid messages built by kodo's own serializer, and the mutations made of them.

#include "fuzz.hpp"

#include <kodo/kodo.hpp>
#include <kodo/tasking/detail/reductions.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fuzz {

class Fuzzed : public kodo::WorkUnit<Fuzzed> {
 public:
  explicit Fuzzed(const kodo::UnitInit<Fuzzed>& init) : WorkUnit(init) {}
  void values(int a, double b, bool c) { calls += a != 0 || b != 0 || c; }
  void text(std::string s, std::vector<int> v) { calls += s.size() + v.size() > 0; }
  void nested(std::vector<std::vector<double>> v) { calls += v.size(); }
  void views(Kokkos::View<double*> v, Kokkos::View<int**> w) { calls += v.size() + w.size() > 0; }
  void sum(std::int64_t) { ++calls; }
  std::size_t calls = 0;
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
  int connection = -1;   // the rank whose connection it came by (-1: the one it names)
  bool unnamed = false;  // it came without UCX's reply endpoint
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
