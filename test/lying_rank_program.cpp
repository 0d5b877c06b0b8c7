// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A rank that lies in its reports to the termination wave and at balance points (issue 54,
// "lies believed"): each lie must end run() with the same kodo::Error on every rank, naming
// the rank and the field, never an early or silent return. On 2 ranks; rank 1 lies.
//   lying_rank_program withheld-round  rank 1's unit withholds its contribution to a
//                                      reduction round, and rank 1 reports one pending
//                                      round fewer than it has (-1) to every wave
//   lying_rank_program parked-count    unit 0 (rank 0) ends its task before the balance
//                                      point; rank 1 reports one more of its units at the
//                                      point than it holds, to the waves and at the point
//   lying_rank_program parked-wave     rank 1 reports a task at a balance point to every
//                                      wave, though no unit has one
//   lying_rank_program parked-held     unit 2 (rank 1) ends its task before the balance
//                                      point; rank 1 reports its 2 units at the point (the
//                                      count the map places there), to the wave and at it
//   lying_rank_program processed-count unit 0 sends unit 1 (both on rank 0) a transfer that
//                                      unit 1 never receives; rank 1 reports one message
//                                      more processed than it ran to every wave
//   lying_rank_program sent-count      rank 1 reports one message more sent to rank 0 than
//                                      it sent, to every wave (the job cannot end: the
//                                      stall report of rank 0 says what it was not sent)
//   lying_rank_program honest-round | honest-parked | honest-wave | honest-processed
//                                      the same programs, told truthfully: they finish
// The lie is made as the rank's report leaves it: this program's own MPI_Iallreduce and
// MPI_Allgather (the MPI profiling interface) alter rank 1's buffer in place, as a rank
// built from altered sources would hold it, then pass it on to PMPI.

#include "wave_report.hpp"

#include <kodo/kodo.hpp>
#include <kodo/tasking/scheduling/detail/termination.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

using Detector = kodo::detail::TerminationDetector;

enum class Lie { none, withheld_round, parked_count, parked_wave, processed_count, sent_count };
Lie lie = Lie::none;               // armed on rank 1 once the runtime is up
bool balance_report_lied = false;  // the report at the balance point is altered once

// Adds `by` to this rank's report of `field` in a wave's buffer: its count and its
// largest report alike (a consistent liar).
void alter(void* report, Detector::Field field, std::uint64_t by) {
  auto* values = static_cast<std::uint64_t*>(report);
  values[field] += by;
  values[Detector::kFields + field] = values[field];
}

class Voter : public kodo::WorkUnit<Voter> {
 public:
  explicit Voter(const kodo::UnitInit<Voter>& init) : WorkUnit(init) {}
  void vote(bool withhold) {
    if (!(withhold && index().x == 1)) contribute(std::int64_t{1});
  }
};

class Walker : public kodo::WorkUnit<Walker> {
 public:
  explicit Walker(const kodo::UnitInit<Walker>& init) : WorkUnit(init) {}
  kodo::Task walk(int stops) {
    if (index().x == stops) co_return;  // never reaches the balance point
    co_await balance_point<&Walker::finish>();
  }
  void finish() { ++finished; }
  template <class State>
  void state(State& s) {
    s("walked", walked_);
  }
  static inline int finished = 0;

 private:
  int walked_ = 0;
};

// Unit 0 sends unit 1 one transfer on a channel of rank 0; unit 1 receives it, or never.
class Sender : public kodo::WorkUnit<Sender> {
 public:
  explicit Sender(const kodo::UnitInit<Sender>& init) : WorkUnit(init) {
    if (index().x < 2) link_ = open_channel(streams().communication(0), {1 - index().x, 0, 0});
  }
  void go(bool receive) {
    data_ = Kokkos::View<long*>("data", 1);
    if (index().x == 0) link_.send(data_, kodo::data_ready);
    if (index().x == 1 && receive) link_.recv(data_, [] { ++received; });
  }
  static inline int received = 0;

 private:
  kodo::Channel link_;
  Kokkos::View<long*> data_;
};

int run_or_report(kodo::Runtime& runtime) {
  try {
    runtime.run();
  } catch (const kodo::Error& e) {
    kodo::print_error(kodo::detail::cat("rank ", runtime.rank(), ": kodo::Error: ", e.what()));
    return 1;
  }
  return 0;
}

}  // namespace

extern "C" int MPI_Iallreduce(const void* send, void* receive, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  if (lie != Lie::none && is_wave_report(count, type, comm)) {
    void* report = const_cast<void*>(send);
    if (lie == Lie::withheld_round) alter(report, Detector::pending_rounds_field, ~0ull);
    // (Until the balance point's report: the lie is about the tasks there.)
    if ((lie == Lie::parked_count && !balance_report_lied) || lie == Lie::parked_wave)
      alter(report, Detector::parked_tasks_field, 1);
    if (lie == Lie::processed_count) alter(report, Detector::processed_field, 1);
    if (lie == Lie::sent_count) {  // one message more, to rank 0, than rank 1 sent
      alter(report, Detector::sent_field, 1);
      static_cast<std::uint64_t*>(report)[Detector::kWaveValues] += 1;
    }
  }
  return PMPI_Iallreduce(send, receive, count, type, op, comm, request);
}

// The report at a balance point: one collection's count, then the wave's count.
extern "C" int MPI_Allgather(const void* send, int count, MPI_Datatype type, void* receive,
                             int receive_count, MPI_Datatype receive_type, MPI_Comm comm) {
  if (lie == Lie::parked_count && !balance_report_lied && count == 2 && type == MPI_UINT64_T) {
    static_cast<std::uint64_t*>(const_cast<void*>(send))[0] += 1;
    balance_report_lied = true;
  }
  return PMPI_Allgather(send, count, type, receive, receive_count, receive_type, comm);
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  kodo::Runtime runtime(argc, argv);
  const bool liar = runtime.rank() == 1 && mode.rfind("honest", 0) != 0;
  if (mode == "withheld-round" || mode == "honest-round") {
    auto voters = kodo::Collection<Voter>::create(runtime, {2, 1, 1});
    std::int64_t rounds = 0;
    voters.on_reduced<std::int64_t>([&](std::uint64_t, const std::int64_t&) { ++rounds; });
    if (liar) lie = Lie::withheld_round;
    voters.broadcast_local<&Voter::vote>(mode == "withheld-round");
    if (const int rc = run_or_report(runtime)) return rc;
    std::printf("rank %d: %lld reduction round(s) delivered\n", runtime.rank(),
                static_cast<long long>(rounds));
    return rounds == 1 ? 0 : 3;
  }
  if (mode == "parked-count" || mode == "honest-parked" || mode == "parked-held") {
    auto walkers = kodo::Collection<Walker>::create(runtime, {4, 1, 1});
    kodo::balance_points(walkers, [](const kodo::BalanceInput& in) { return in.owners; });
    if (liar) lie = Lie::parked_count;
    // The unit whose task ends early: 0 (rank 0's), 2 (the liar's own), or none.
    const bool held = mode == "parked-held";
    walkers.broadcast_local<&Walker::walk>(mode == "parked-count" ? 0 : held ? 2 : -1);
    if (const int rc = run_or_report(runtime)) return rc;
    std::printf("rank %d: %d unit(s) went on from the balance point\n", runtime.rank(),
                Walker::finished);
    return Walker::finished == 2 ? 0 : 3;
  }
  if (mode == "parked-wave" || mode == "honest-wave" || mode == "sent-count") {
    auto voters = kodo::Collection<Voter>::create(runtime, {2, 1, 1});
    if (liar) lie = mode == "sent-count" ? Lie::sent_count : Lie::parked_wave;
    voters.broadcast_local<&Voter::vote>(false);
    return run_or_report(runtime);
  }
  if (mode == "processed-count" || mode == "honest-processed") {
    auto senders = kodo::Collection<Sender>::create(runtime, {4, 1, 1});
    if (liar) lie = Lie::processed_count;
    senders.broadcast_local<&Sender::go>(mode == "honest-processed");
    if (const int rc = run_or_report(runtime)) return rc;
    std::printf("rank %d: %d transfer(s) received\n", runtime.rank(), Sender::received);
    return Sender::received == (runtime.rank() == 0 && mode == "honest-processed" ? 1 : 0) ? 0 : 3;
  }
  std::fputs(
      "usage: lying_rank_program withheld-round|parked-count|parked-wave|parked-held|"
      "processed-count|sent-count|honest-round|honest-parked|honest-wave|honest-processed\n",
      stderr);
  return 2;
}
