// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The same-node route of a link handed to device work: a step program whose graphs make
// their transfers with other ranks themselves (tasking/programs/detail/step_program_graphs.cpp)
// takes the words and buffers of its links' routes here; from then on neither rank's loop moves
// those transfers. Both ends of a link may be handed over apart: the words are the same whichever
// side's host or device writes them.

#include <kodo/backends/detail/native.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace kodo::detail {

struct ChannelEnd;
struct RingCore;

// A ring's transfers, as device work waits for them and gives their buffers back.
struct RouteIn {
  backend::DeviceWait arrived;  // for the ring's count (value set by the waiting node)
  std::uint64_t* consumed;      // the count of released transfers, as the device writes it
  std::uint64_t next;           // the first transfer device work handles
};
// A channel's sends into its peer's ring, as device work makes them.
struct RouteOut {
  backend::DeviceWait consumed;  // for the peer's released count (value set by the node)
  std::vector<void*> to;         // by ring buffer: where the device writes it
  std::vector<std::uint64_t> capacity;
  std::vector<std::uint64_t*> size_words;  // by ring buffer
  std::uint64_t* arrived;                  // the ring's count
  std::uint64_t next;                      // the first transfer device work makes
};

// The ring's route, where device work may wait for its transfers (a same-node ring into
// device memory, on GPUs that no two ranks share), otherwise none. Its sender has mapped
// it unless a refusal is still to come: ask once the job has been quiet since the ring
// started. Device work takes over from the first transfer not released.
std::optional<RouteIn> route_in(const RingCore& ring);
// The end's sending route, where it is the same-node route (settled: the receiver's offer
// taken) on GPUs that no two ranks share and no send is in flight; otherwise none.
std::optional<RouteOut> route_out(const ChannelEnd& end);
// From now on device work makes the ring's transfers: its posted receives are dropped
// (none may have been sent yet: the loop would never count them done) and it takes no
// more.
void hand_ring_to_device(RingCore& ring);

}  // namespace kodo::detail
