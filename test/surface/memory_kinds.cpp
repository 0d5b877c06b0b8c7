// Must not compile: how the transport tells memory kinds apart is kodo::detail.
#include <kodo/kodo.hpp>
auto kind = kodo::memory_kind<Kokkos::HostSpace>();
