// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A type of one's own in messages: a Tally (a name and counts, so neither trivially
// copyable nor a view) travels in entry-method calls through a kodo::Serializer written
// for it. Its unpack() checks what arrived, as kodo checks its own fields: bytes from
// another rank are input, and a bad message must end the job with an error naming it,
// never pass as a wrong value. (Calls between units of one rank are not serialized: the
// Tally is moved as it is. Run this on 2 ranks or more to exercise the Serializer.)
//
//   mpiexec -n 2 own_type
#include <kodo/kodo.hpp>

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

struct Tally {
  std::string name;
  std::vector<std::int64_t> counts;
  std::int64_t total = 0;  // the sum of counts, kept beside them
};

template <>
struct kodo::Serializer<Tally> {
  static void pack(kodo::ByteWriter& w, const Tally& t) {
    kodo::pack(w, t.name);  // std::string and std::vector have serializers of their own
    kodo::pack(w, t.counts);
    kodo::pack(w, t.total);
  }
  static Tally unpack(kodo::ByteReader& r) {
    Tally t;
    t.name = kodo::unpack<std::string>(r);
    t.counts = kodo::unpack<std::vector<std::int64_t>>(r);
    t.total = kodo::unpack<std::int64_t>(r);
    // What a Tally promises, checked before anyone uses it.
    if (t.counts.size() > 64 ||
        std::accumulate(t.counts.begin(), t.counts.end(), std::int64_t{0}) != t.total)
      throw kodo::Error("a Tally of " + std::to_string(t.counts.size()) +
                        " counts arrived whose total does not match them");
    return t;
  }
};

class Counter : public kodo::WorkUnit<Counter> {
 public:
  explicit Counter(const kodo::UnitInit<Counter>& init) : WorkUnit(init) {}

  void start() {
    Tally t{"unit " + std::to_string(linear()), {}, 0};
    for (std::int64_t i = 0; i <= linear(); ++i) t.counts.push_back(i);
    t.total = std::accumulate(t.counts.begin(), t.counts.end(), std::int64_t{0});
    const std::int64_t n = collection().size();
    unit(collection().shape().delinear((linear() + 1) % n)).send<&Counter::take>(std::move(t));
  }

  // The tally of the unit before this one: its counts 0 .. that unit's index.
  void take(Tally t) {
    const std::int64_t from = (linear() + collection().size() - 1) % collection().size();
    const bool right = t.name == "unit " + std::to_string(from) &&
                       static_cast<std::int64_t>(t.counts.size()) == from + 1 &&
                       t.total == from * (from + 1) / 2;
    contribute(std::int64_t{right}, kodo::Sum{});
  }

 private:
  std::int64_t linear() const { return collection().shape().linear(index()); }
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: own_type\n"
          "Each of 8 work units passes a Tally (a name and counts) to the next in an\n"
          "entry-method call, through a kodo::Serializer that checks what arrives.\n"))
    return 0;
  const std::int64_t units = 8;
  auto counters = kodo::Collection<Counter>::create(runtime, {units, 1, 1});
  counters.broadcast_local<&Counter::start>();
  runtime.run();
  const auto right = counters.reduced<std::int64_t>();
  if (runtime.rank() == 0)
    std::printf("own_type: %lld of %lld units received their neighbour's Tally intact\n",
                static_cast<long long>(right), static_cast<long long>(units));
  return right == units ? 0 : 1;
}
