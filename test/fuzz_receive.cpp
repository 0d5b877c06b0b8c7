// Fuzz test of the receive path: random and mutated messages, handed to a running
// rank exactly as UCX hands it an eager active message, then dispatched. Run under
// mpiexec on 2 ranks (each rank fuzzes itself, posing as the other), in CI also under
// AddressSanitizer and UndefinedBehaviorSanitizer.
//
//   fuzz_receive [--seed S] [--seconds T] [--inputs N]
//
// Every input must be either accepted (the entry method or reduction step runs) or
// refused with a kodo::Error whose message names the bad field; anything else (another
// exception, a crash, a sanitizer report) fails. Bases are valid messages built by
// kodo's own serializer; mutations flip bits, cut, extend, and set header fields to
// edge values or to ids of other handlers. One input in eight is a valid message that
// came over the wrong connection (this rank's own endpoint, or none) while it names the
// peer: it must be refused with exactly the sender's refusal, nothing else.

#include "test_access.hpp"

#include <kodo/kodo.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace {

using kodo::detail::Entry;
using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;

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

struct Input {
  std::vector<std::byte> header, data;
  int connection = -1;   // the rank whose connection it came over
  bool unnamed = false;  // it came without UCX's reply endpoint
  std::string expected;  // the refusal it must get, when that is known exactly
};

template <class T>
void put(std::vector<std::byte>& b, std::size_t at, const T& v) {
  if (at + sizeof v <= b.size()) std::memcpy(b.data() + at, &v, sizeof v);
}

class Generator {
 public:
  Generator(std::uint64_t seed, int self, int peer, std::int64_t first_local)
      : rng_(seed), self_(self), peer_(peer), first_(first_local) {
    ids_ = {Entry<Fuzzed, &Fuzzed::values>::id,
            Entry<Fuzzed, &Fuzzed::text>::id,
            Entry<Fuzzed, &Fuzzed::nested>::id,
            Entry<Fuzzed, &Fuzzed::views>::id,
            Entry<Other, &Other::poke>::id,
            SumReducer::id,
            OtherSum::id,
            0,
            1,
            ~std::uint64_t{0}};
  }

  Input next() {
    Input in = base();
    in.connection = peer_;  // whatever its header says, the peer sent it
    if (pick(0, 7) == 0) {  // valid, over the wrong connection
      in.unnamed = pick(0, 1) == 0;
      in.connection = self_;
      in.expected = in.unnamed
                        ? "kodo: sender is unknown: it does not say which connection it came by"
                        : kodo::detail::cat("kodo: field source_rank says rank ", peer_,
                                            ", but it came over the connection of rank ", self_);
      return in;
    }
    const int mutations = pick(0, 4);
    for (int i = 0; i < mutations; ++i) mutate(in);
    return in;
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::uint64_t word() { return rng_(); }

  template <auto M, class... A>
  Input call(A&&... args) {
    kodo::detail::Message m;
    Entry<Fuzzed, M>::serialize(m, std::forward<A>(args)...);
    MessageHeader h{MessageKind::invoke, 0, Entry<Fuzzed, M>::id, first_ + pick(0, 1), peer_};
    Input in;
    if (m.attachments.empty()) {
      in.header.resize(sizeof h);
      std::memcpy(in.header.data(), &h, sizeof h);
      in.data = m.payload;
    } else {
      h.flags = kodo::detail::kHasAttachments;
      in.header.resize(sizeof h + m.payload.size());
      std::memcpy(in.header.data(), &h, sizeof h);
      std::memcpy(in.header.data() + sizeof h, m.payload.data(), m.payload.size());
      for (const auto& a : m.attachments) {
        const auto* p = static_cast<const std::byte*>(a.segment.data);
        in.data.insert(in.data.end(), p, p + a.segment.bytes);
      }
    }
    return in;
  }

  // A channel link announcement or a same-node ring message from the peer, about a link
  // between one of its units and one of ours (numbered consistently).
  Input link_message() {
    const std::int64_t receiver = 2 * peer_ + pick(0, 1), sender = first_ + pick(0, 1);
    const std::int32_t port = pick(0, 2);
    const kodo::detail::LinkKey link{0, receiver, sender, port};
    const auto number = static_cast<std::uint32_t>(receiver * 8 + (sender % 2) * 4 + port);
    const auto epoch = static_cast<std::uint32_t>(pick(1, 3));
    kodo::detail::Message m;
    if (pick(0, 1)) {
      m = kodo::detail::announcement_message({link, number, epoch, pick(0, 1) == 1}, peer_);
    } else {
      kodo::detail::RingMessage ring{link, number, epoch, kodo::detail::RingMessage::offer, 0, {}};
      ring.words = 64 * static_cast<std::uint64_t>(pick(0, 4));
      for (int b = pick(1, 3); b > 0; --b)
        ring.buffers.push_back({static_cast<std::uint64_t>(pick(0, 64)),
                                false,
                                4096 + 64 * static_cast<std::uint64_t>(ring.buffers.size()),
                                {}});
      m = kodo::detail::ring_message(ring, peer_);
    }
    Input in;
    in.header.resize(sizeof m.header);
    std::memcpy(in.header.data(), &m.header, sizeof m.header);
    in.data = m.payload;
    return in;
  }

  Input base() {
    switch (pick(0, 6)) {
      case 6: return link_message();
      case 0: return call<&Fuzzed::values>(pick(-5, 5), 0.5 * pick(0, 9), pick(0, 1) == 1);
      case 1:
        return call<&Fuzzed::text>(std::string(static_cast<std::size_t>(pick(0, 40)), 'k'),
                                   std::vector<int>(static_cast<std::size_t>(pick(0, 9)), 3));
      case 2:
        return call<&Fuzzed::nested>(std::vector<std::vector<double>>(
            static_cast<std::size_t>(pick(0, 4)),
            std::vector<double>(static_cast<std::size_t>(pick(0, 4)), 1.0)));
      case 3:
        return call<&Fuzzed::views>(Kokkos::View<double*>("v", pick(0, 16)),
                                    Kokkos::View<int**>("w", pick(0, 4), pick(0, 4)));
      default: {  // a reduction partial or result
        MessageHeader h{pick(0, 1) ? MessageKind::reduction_partial : MessageKind::reduction_result,
                        0, SumReducer::id, pick(0, 6), peer_};
        Input in;
        in.header.resize(sizeof h);
        std::memcpy(in.header.data(), &h, sizeof h);
        const std::int64_t v = pick(-100, 100);
        in.data.resize(sizeof v);
        std::memcpy(in.data.data(), &v, sizeof v);
        return in;
      }
    }
  }

  std::int64_t edge() {
    static constexpr std::int64_t values[] = {0,
                                              1,
                                              -1,
                                              2,
                                              3,
                                              4,
                                              255,
                                              65536,
                                              std::numeric_limits<std::int32_t>::max(),
                                              std::numeric_limits<std::int64_t>::max(),
                                              std::numeric_limits<std::int64_t>::min()};
    return pick(0, 1) ? values[pick(0, 10)] : static_cast<std::int64_t>(word());
  }

  void mutate(Input& in) {
    auto& b = pick(0, 2) ? in.header : in.data;
    switch (pick(0, 9)) {
      case 0:
        put(in.header, offsetof(MessageHeader, kind), static_cast<std::uint32_t>(edge()));
        break;
      case 1:
        put(in.header, offsetof(MessageHeader, collection), static_cast<std::uint32_t>(pick(0, 3)));
        break;
      case 2:
        put(in.header, offsetof(MessageHeader, handler),
            ids_[static_cast<std::size_t>(pick(0, 9))]);
        break;
      case 3: put(in.header, offsetof(MessageHeader, target), edge()); break;
      case 4:
        put(in.header, offsetof(MessageHeader, source_rank),
            static_cast<std::int32_t>(pick(0, 1) ? self_ : edge()));
        break;
      case 5:
        put(in.header, offsetof(MessageHeader, flags), static_cast<std::uint32_t>(pick(0, 3)));
        break;
      case 6:  // a count or extent in the arguments set to an edge value
        if (b.size() >= 8)
          put(b, static_cast<std::size_t>(pick(0, static_cast<int>(b.size()) - 8)), edge());
        break;
      case 7:
        if (!b.empty())
          b[static_cast<std::size_t>(pick(0, static_cast<int>(b.size()) - 1))] ^=
              std::byte(1 << pick(0, 7));
        break;
      case 8:
        b.resize(b.empty() ? 0 : static_cast<std::size_t>(pick(0, static_cast<int>(b.size()) - 1)));
        break;
      default:
        b.resize(b.size() + static_cast<std::size_t>(pick(1, 24)), std::byte(pick(0, 255)));
        break;
    }
  }

  std::mt19937_64 rng_;
  int self_, peer_;
  std::int64_t first_;
  std::vector<std::uint64_t> ids_;
};

constexpr const char* kUsage =
    "usage: mpiexec -n 2 fuzz_receive [--seed S] [--seconds T] [--inputs N]\n"
    "Feeds random and mutated messages to the receive path of each rank; each must be\n"
    "accepted or refused with an error naming the bad field.\n"
    "  --seed     seed of the generator (default 1)\n"
    "  --seconds  time to run (default 20)\n"
    "  --inputs   most messages per rank (default 200000)\n";

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(kUsage)) return 0;
  std::uint64_t seed = 1;
  double seconds = 20;
  long max_inputs = 200000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--seconds")
      seconds = std::strtod(argv[i + 1], nullptr);
    else if (flag == "--inputs")
      max_inputs = std::strtol(argv[i + 1], nullptr, 10);
  }
  if (runtime.size() != 2) {
    if (runtime.rank() == 0) std::fprintf(stderr, "fuzz_receive: run it on 2 ranks\n");
    return 2;
  }
  auto fuzzed = kodo::Collection<Fuzzed>::create(runtime, {4, 1, 1});
  auto other = kodo::Collection<Other>::create(runtime, {2, 1, 1});
  const int self = runtime.rank();
  Generator gen(seed * 2 + static_cast<std::uint64_t>(self), self, 1 - self, 2 * self);
  const std::regex names_field("field |argument|view|header|reduction");

  long inputs = 0, accepted = 0, refused = 0, refused_sender = 0, refused_other = 0, failures = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (inputs < max_inputs && std::chrono::steady_clock::now() < until) {
    const Input in = gen.next();
    ++inputs;
    try {
      if (in.unnamed)
        accepted += kodo::detail::TestAccess::receive_with(runtime, in.header, in.data,
                                                           ucp_am_recv_param_t{}) > 0;
      else
        accepted += kodo::detail::TestAccess::receive(runtime, in.header, in.data, in.connection) >
                    0;
      if (!in.expected.empty() && failures++ < 10)
        kodo::print_error(kodo::detail::cat("fuzz_receive: rank ", self,
                                            ": taken over the wrong connection: should be ",
                                            in.expected));
    } catch (const kodo::Error& e) {
      ++refused;
      ++(in.expected.empty() ? refused_other : refused_sender);
      if (!in.expected.empty()) {
        if (!std::string_view(e.what()).starts_with(in.expected) && failures++ < 10)
          kodo::print_error(kodo::detail::cat("fuzz_receive: rank ", self, ": refused with '",
                                              e.what(), "' where '", in.expected,
                                              "' was expected"));
      } else if (!std::regex_search(e.what(), names_field) && failures++ < 10)
        kodo::print_error(kodo::detail::cat("fuzz_receive: rank ", self,
                                            ": a refusal names no field: ", e.what()));
    } catch (const std::exception& e) {
      if (failures++ < 10)
        kodo::print_error(kodo::detail::cat("fuzz_receive: rank ", self,
                                            ": not a kodo::Error: ", e.what()));
    }
  }
  std::size_t calls = 0;
  fuzzed.for_each_local([&](Fuzzed& f) { calls += f.calls; });
  std::printf(
      "fuzz: rank %d, seed %llu: %ld inputs, %ld accepted (%zu entry-method effects), %ld refused "
      "(%ld for their connection), %ld failures\n",
      self, static_cast<unsigned long long>(seed), inputs, accepted, calls, refused, refused_sender,
      failures);
  std::fflush(stdout);
  int bad = failures != 0 || accepted == 0 || refused_other == 0 || refused_sender == 0;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, runtime.comm());
  (void)other;
  return bad;
}
