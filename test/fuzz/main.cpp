// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Fuzz test of the receive code (fuzz_receive): one surface at a time, or all, each
// rank feeding its own receive path inputs made as a peer's bytes would come, checked
// against exact pass conditions (fuzz.hpp). Run under mpiexec: 2 ranks, 3 for
// channel_tags; in CI also under AddressSanitizer and UndefinedBehaviorSanitizer.

#include "messages.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace {

constexpr const char* kUsage =
    "usage: mpiexec -n 2 fuzz_receive --surface NAME [--seed S] [--seconds T] [--inputs N] "
    "[--list]\n"
    "Feeds each rank's receive code inputs a peer could send; each must be taken, refused\n"
    "with exactly the error its spoiled field calls for, or (random bytes) refused with an\n"
    "error the surface lists. Surfaces (2 ranks unless said):\n"
    "  calls         entry-method calls, eager (with and without views)\n"
    "  rendezvous    calls announced by rendezvous: lengths checked before data moves\n"
    "  links         channel link announcements and same-node ring messages\n"
    "  reductions    reduction partials and results\n"
    "  faults        a peer's fault report (what this rank prints for it)\n"
    "  channel_tags  3 ranks: tagged transfers aimed at another rank's link\n"
    "  ring_words    the words of a same-node ring its sender writes (host backend)\n"
    "  counts        a peer's report to the termination wave (sums, flags, sent to each)\n"
    "  balance_counts  a peer's report at a balance point (its units there, its wave's)\n"
    "  migration_headers  a peer's header for the unit it moves here (kodo::migrate)\n"
    "  migration_records  the records of the unit a peer moves here (its state())\n"
    "  checkpoint_gather  a peer's checkpoint entries as rank 0 gathers them\n"
    "  route_offers  the slots a peer offers for moving units' views (same-node route;\n"
    "                host backend)\n"
    "  --seed     seed of the generators (default 1)\n"
    "  --seconds  time per surface (default 20)\n"
    "  --inputs   most inputs per surface and rank (default 10000000)\n"
    "  --list     print each kind of refusal seen, with its count (rank 0)\n";

struct Surface {
  const char* name;
  int ranks;
  std::function<fuzz::Tally(fuzz::Context&)> run;
};

const Surface kSurfaces[] = {
    {"calls", 2, fuzz::fuzz_calls},
    {"rendezvous", 2, fuzz::fuzz_rendezvous},
    {"links", 2, fuzz::fuzz_links},
    {"reductions", 2, fuzz::fuzz_reductions},
    {"faults", 2, fuzz::fuzz_faults},
    {"channel_tags", 3, fuzz::fuzz_channel_tags},
    {"ring_words", 2, fuzz::fuzz_ring_words},
    {"counts", 2, fuzz::fuzz_counts},
    {"balance_counts", 2, fuzz::fuzz_balance_counts},
    {"migration_headers", 2, fuzz::fuzz_migration_headers},
    {"migration_records", 2, fuzz::fuzz_migration_records},
    {"checkpoint_gather", 2, fuzz::fuzz_checkpoint_gather},
    {"route_offers", 2, fuzz::fuzz_route_offers},
};

// A strictly parsed number, or exit 2 naming the option.
template <class T>
T number(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !(v >= 0) || v > 1e15) {
    std::fprintf(stderr, "fuzz_receive: %s wants a non-negative number, not '%s'\n", flag.c_str(),
                 text);
    std::exit(2);
  }
  return static_cast<T>(v);
}

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(kUsage)) return 0;
  std::string surface;
  std::uint64_t seed = 1;
  double seconds = 20;
  long max_inputs = 10000000;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--list") {
      list = true;
      continue;
    }
    if (i + 1 >= argc ||
        (flag != "--surface" && flag != "--seed" && flag != "--seconds" && flag != "--inputs")) {
      if (runtime.rank() == 0)
        std::fprintf(stderr, "fuzz_receive: bad option '%s'\n%s", argv[i], kUsage);
      return 2;
    }
    const char* value = argv[++i];
    if (flag == "--surface")
      surface = value;
    else if (flag == "--seed")
      seed = number<std::uint64_t>(flag, value);
    else if (flag == "--seconds")
      seconds = number<double>(flag, value);
    else
      max_inputs = number<long>(flag, value);
  }
  const Surface* chosen = nullptr;
  for (const Surface& s : kSurfaces)
    if (surface == s.name) chosen = &s;
  if (!chosen) {
    if (runtime.rank() == 0)
      std::fprintf(stderr, "fuzz_receive: --surface '%s' is not a surface\n%s", surface.c_str(),
                   kUsage);
    return 2;
  }
  if (runtime.size() != chosen->ranks) {
    if (runtime.rank() == 0)
      std::fprintf(stderr, "fuzz_receive: surface %s runs on %d ranks\n", chosen->name,
                   chosen->ranks);
    return 2;
  }
  // The units and reductions the message surfaces name (the same on every rank).
  auto fuzzed = kodo::Collection<fuzz::Fuzzed>::create(runtime, {fuzz::kFuzzedUnits, 1, 1});
  auto other = kodo::Collection<fuzz::Other>::create(runtime, {2, 1, 1});

  fuzz::Context context{runtime,
                        std::mt19937_64(seed * 4 + static_cast<std::uint64_t>(runtime.rank())),
                        std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(seconds)),
                        max_inputs};
  const fuzz::Tally tally = chosen->run(context);
  std::printf("%s\n", tally.summary().c_str());
  if (list && runtime.rank() == 0)
    for (const auto& [kind, count] : tally.kinds())
      std::printf("  %8ld  %s\n", count, kind.c_str());
  std::fflush(stdout);
  long accepted = tally.accepted();
  MPI_Allreduce(MPI_IN_PLACE, &accepted, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  int bad = !tally.passed() || (tally.needs_refusals() && accepted == 0);
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  (void)fuzzed;
  (void)other;
  return bad;
}
