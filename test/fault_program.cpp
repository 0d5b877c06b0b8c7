// Faults that must end the whole job with an error naming the cause, never a hang:
//   fault_program truncate   a channel message larger than the receiving view
//   fault_program peer-exit  a rank dies while others are sending to it
// Units are laid out so that, on two ranks, unit 0 is on rank 0 and unit 1 on rank 1;
// on one rank both are local (the same-rank path).

#include <kodo.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

class Peer : public kodo::WorkUnit<Peer> {
 public:
  explicit Peer(const kodo::UnitInit<Peer>& init)
      : WorkUnit(init),
        link_(open_channel({1 - init.index.x, 0, 0}, streams().communication(0))) {}

  void truncate() {
    if (index().x == 0) {
      link_.send(Kokkos::View<double*>("big", 100));
    } else {
      small_ = Kokkos::View<double*>("small", 10);
      link_.recv(small_, [] { std::puts("unexpected: the oversized message was accepted"); });
    }
  }

  // Unit 0 keeps calling unit 1; the rank holding unit 1 dies on the first call.
  void ping(int n) {
    if (index().x == 1) {
      if (collection().runtime().size() > 1) _exit(3);
      return;
    }
    unit({1, 0, 0}).send<&Peer::ping>(n + 1);
    unit({0, 0, 0}).send<&Peer::ping>(n + 1);
  }

 private:
  kodo::Channel link_;
  Kokkos::View<double*> small_;
};

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  auto units = kodo::Collection<Peer>::create(runtime, {2, 1, 1});
  if (mode == "truncate") {
    units.broadcast_local<&Peer::truncate>();
  } else if (mode == "peer-exit") {
    if (runtime.rank() == 0) units[{0, 0, 0}].send<&Peer::ping>(0);
  } else {
    std::fprintf(stderr, "usage: fault_program truncate|peer-exit\n");
    return 2;
  }
  runtime.run();
  std::puts("unexpected: the job finished");
  return 0;
}
