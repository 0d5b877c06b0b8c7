// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Tutorial 3: channels and receive rings, for data that goes to the same neighbour
// every step.
//
// Units sit in a ring; at each step every unit sends its right neighbour a halo whose
// length changes from step to step (like particles leaving a subdomain), received into
// a ring of two buffers of the largest size. The ring hands the halos over in step
// order with their lengths, and reposts a buffer once the unit releases it. At the end
// each unit contributes what it received; rank 0 prints the total.
//
//   mpiexec -n 2 halo_ring
#include <kodo/kodo.hpp>

#include <cstdio>
#include <vector>

constexpr int kSteps = 50;
constexpr std::int64_t kMost = 8;  // the largest halo
using Halo = Kokkos::View<double*, Kokkos::HostSpace>;

// How many values unit `u` sends at `step` (each of them u + 1).
std::int64_t halo_length(std::int64_t u, int step) { return 1 + (u + 3 * step) % kMost; }

class Cell : public kodo::WorkUnit<Cell> {
 public:
  explicit Cell(const kodo::UnitInit<Cell>& init) : WorkUnit(init) {
    const std::int64_t n = init.shape.size(), me = init.shape.linear(init.index);
    // 1. A channel links two units; each opens its end (the stream comes first: local
    //    and staging copies run there). Both units of a link must open it.
    // [open] (the API reference quotes the lines between these marks)
    kodo::Stream& stream = streams().communication(0);
    right_ = open_channel(stream, init.shape.delinear((me + 1) % n));
    left_ = open_channel(stream, init.shape.delinear((me + n - 1) % n));
    // 2. The receiving end opens a ring of buffers the sender writes into; each arrival
    //    is handed to the callback, in order, with its length.
    halos_ = left_.open_ring(std::vector{Halo("halo0", kMost), Halo("halo1", kMost)},
                             [this](const kodo::Arrival<Halo>& a) { on_halo(a); });
    // [open]
  }

  void start() { send(0); }

 private:
  std::int64_t me() const { return collection().shape().linear(index()); }

  void send(int step) {
    Halo out("out", halo_length(me(), step));
    Kokkos::deep_copy(out, static_cast<double>(me() + 1));
    // 3. Send. send(view) leaves once the work enqueued on the channel's stream (a pack)
    //    is done; with data_ready at once (written by the host here: complete now).
    right_.send(out, kodo::data_ready);
  }

  // Halos arrive in step order (a.transfer is the step), a.count values each.
  void on_halo(const kodo::Arrival<Halo>& a) {
    for (std::size_t i = 0; i < a.count; ++i) received_ += a.view(i);
    // 4. Release the buffer once done with it: it takes the halo two steps on.
    halos_.release(a.transfer);
    if (a.transfer + 1 < kSteps)
      send(static_cast<int>(a.transfer) + 1);
    else
      contribute(received_, kodo::Sum{});  // read by the main program
  }

  kodo::Channel right_, left_;
  kodo::ReceiveRing<Halo> halos_;
  double received_ = 0;
};

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  if (runtime.print_usage_if_requested(
          "usage: halo_ring\n"
          "Units in a ring send halos of varying length to their neighbours for 50 steps,\n"
          "through receive rings; the main program prints the reduction of what arrived.\n"))
    return 0;
  const kodo::Extent3 shape{6, 1, 1};
  auto cells = kodo::Collection<Cell>::create(runtime, shape);
  cells.broadcast_local<&Cell::start>();
  runtime.run();

  double expected = 0;
  for (std::int64_t u = 0; u < shape.size(); ++u)
    for (int step = 0; step < kSteps; ++step) expected += (u + 1.0) * halo_length(u, step);
  const double total = cells.reduced<double>();
  if (runtime.rank() == 0)
    std::printf("halo_ring: %s total %.0f over %d steps\n",
                total == expected ? "the expected" : "a WRONG", total, kSteps);
  return total == expected ? 0 : 1;
}
