// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Several kodo::Runtime objects one after another in one process: nothing of one
// (collections, channels, handlers, counters) leaks into the next. The program owns
// MPI and Kokkos, which cannot be started twice.

#include <kodo/kodo.hpp>

#include <cstdio>

namespace {

// Units in a ring pass one value over a channel and then sum their indices.
class Link : public kodo::WorkUnit<Link> {
 public:
  explicit Link(const kodo::UnitInit<Link>& init)
      : WorkUnit(init),
        next_(open_channel(streams().communication(0),
                           init.shape.delinear((init.shape.linear(init.index) + 1) %
                                               init.shape.size()))),
        previous_(open_channel(streams().communication(0),
                               init.shape.delinear((init.shape.linear(init.index) +
                                                    init.shape.size() - 1) %
                                                   init.shape.size()))) {}

  void start(long round) {
    inbox_ = Kokkos::View<long*>("inbox", 1);
    outbox_ = Kokkos::View<long*>("outbox", 1);
    Kokkos::deep_copy(outbox_, collection().shape().linear(index()) + 100 * round);
    previous_.recv(inbox_, [this] {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, inbox_);
      received = h(0);
      contribute<&Link::total>(collection().shape().linear(index()), kodo::Sum{});
    });
    next_.send(outbox_, kodo::data_ready);
  }
  void total(long sum) { sum_ = sum; }

  long received = -1, sum_ = -1;

 private:
  kodo::Channel next_, previous_;
  Kokkos::View<long*> inbox_, outbox_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  int failures = 0;
  for (long round = 0; round < 3; ++round) {
    kodo::Runtime runtime(argc, argv);
    auto links = kodo::Collection<Link>::create(runtime, {5, 1, 1});
    links.broadcast_local<&Link::start>(round);
    runtime.run();
    links.for_each_local([&](Link& l) {
      const long me = links.shape().linear(l.index()), from = (me + 4) % 5;
      if (l.received != from + 100 * round || l.sum_ != 10) {
        std::fprintf(stderr,
                     "round %ld, unit %ld: received %ld (expected %ld), sum %ld (expected 10)\n",
                     round, me, l.received, from + 100 * round, l.sum_);
        ++failures;
      }
    });
  }
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("sequential runtimes: 3 in a row, %d failure(s)\n", failures);
  Kokkos::finalize();
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
