// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Channels: persistent links between two work units for repeated transfers of views
/// (halos), with receives posted in advance into the views the data must land in. Both
/// units open their ends; a receive ring hands transfers over in order
/// (examples/03_halo_ring.cpp):
/// @snippet 03_halo_ring.cpp open
/// The k-th send on one end lands in the k-th receive posted on the other, whatever order
/// the messages travel in; completions run from the scheduler loop, never inside UCX, and
/// no call blocks the rank. A transfer that does not fit its receive ends the job, on
/// both ranks. The routes (UCX, same-node rings, same rank, host-staged) and the rules a
/// program keeps: docs/concepts.md, "Channels and receive rings"; links, tags and what
/// is checked: docs/architecture.md, "A call, and a channel transfer".

#include <kodo/backends/detail/memory.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/core/detail/recycled.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kodo {

/// How a channel moves data between ranks: straight from the view's memory (GPU-aware
/// UCX, or the same-node route), or staged through pinned host memory.
enum class CommMode { device, host_staged };

/// "device" or "host"; throws kodo::Error for anything else.
CommMode parse_comm_mode(std::string_view text);
/// "device" or "host".
const char* to_string(CommMode mode);

/// Tag for Channel::send: the data is complete now (no device work on it is pending).
struct DataReady {};
/// The DataReady tag to pass.
inline constexpr DataReady data_ready{};

template <class D>
class WorkUnit;

namespace detail {

struct ChannelEnd;  // one end's state (channel_end.hpp)
struct RingCore;    // a receive ring's state (receive_ring.hpp)
class ChannelHost;  // what channels need of the runtime (channel_impl.hpp)
struct LinkSpec;    // where a link goes (channel_impl.hpp)
class RankProgram;  // tasking/programs/step_program.hpp: opens channels for its units

// A ring's state (receive_ring.cpp); what ReceiveRing calls of it. `core` may be null (a
// ring that is not open: release() then throws).
void release_ring(RingCore* core, Stream* stream, std::uint64_t transfer);
void stop_ring(RingCore& core);
bool ring_waits_on_streams(const RingCore* core);
void wait_on_ring(RingCore* core, Stream& stream, std::uint64_t transfer);
// The memory of a contiguous Kokkos view; `what` names it in the error a view that is not
// contiguous gets ("<what> must be contiguous").
template <class V>
Segment view_segment(const V& v, const char* what);

}  // namespace detail

/// What a receive ring hands its unit: one transfer, in transfer order.
template <class V>
struct Arrival {
  std::uint64_t transfer;  ///< 0, 1, 2, ... on this channel
  std::size_t count;       ///< elements that arrived, at most view.size()
  V view;                  ///< the ring's buffer they arrived in
};

/// A ring of receive buffers on one channel (Channel::open_ring). It keeps each free
/// buffer posted, hands transfers to the unit in transfer order however they travel
/// (transfer t lands in buffer t % buffers()), and reposts a buffer once the unit
/// releases the transfer in it. Transfers are released in order, each after it was
/// handed over or waited for on a stream; anything else is an error. Destroying the
/// ring stops its hand-overs; close the channel with it (its posted receives belong to
/// the channel).
///
/// Waits on streams (same-node route): the unit may queue the work that reads transfer t
/// before t arrives, behind wait(stream, t), and release t on that stream at once; no
/// host then stands between t's arrival and that work, nor between the work's end and
/// the sender's next transfer into the buffer (on GPUs the release's count is stored by
/// the stream, and the sender's stream waits for it on the device). on_arrival still
/// runs for every transfer, later. Waits are bounded (KODO_DEVICE_WAIT_SECONDS, default
/// 60 s; running out ends the job naming the link), and end early when either end
/// closes. A stream waiting on the device holds the work queued behind it: queue the
/// sends the peer needs before the waits for its answers.
template <class V>
class ReceiveRing {
 public:
  /// A ring that is not open.
  ReceiveRing() = default;
  /// Moves the ring; `other` is then not open.
  ReceiveRing(ReceiveRing&&) noexcept = default;
  /// Stops this ring's hand-overs and takes over `other`'s.
  ReceiveRing& operator=(ReceiveRing&& other) noexcept {
    if (this != &other) {
      stop();
      core_ = std::move(other.core_);
    }
    return *this;
  }
  ~ReceiveRing() { stop(); }

  /// The buffer of `transfer` may be written again now: the unit is done with it.
  void release(std::uint64_t transfer) { detail::release_ring(core_.get(), nullptr, transfer); }
  /// ... once the work enqueued on `stream` so far (device work reading it) is done.
  void release(Stream& stream, std::uint64_t transfer) {
    detail::release_ring(core_.get(), &stream, transfer);
  }
  /// The 0.1 argument order, kept for one release (CHANGELOG, "Deprecated").
  [[deprecated("kodo 0.2 takes the stream first: release(stream, transfer)")]]
  void release(std::uint64_t transfer, Stream& stream) {
    release(stream, transfer);
  }
  /// Whether the ring was opened (and not moved from).
  bool is_open() const { return core_ != nullptr; }

  /// Whether wait() may be called: the ring takes the same-node route and a transfer has
  /// come that way (so the sender mapped it); false until then, on other routes, and
  /// where ranks share a GPU (KODO_SHARE_GPUS: the GPU time-slices them, and a kernel
  /// waiting for the other rank would hold it for a whole slice, ~2 ms on an H100).
  bool waits_on_streams() const { return detail::ring_waits_on_streams(core_.get()); }
  /// Work enqueued on `stream` from now on runs once `transfer` is in its buffer
  /// (transfer % buffers()). `transfer` is not released yet, and its buffer is free: it
  /// is below the oldest transfer not released + buffers(). On the host backend, whose
  /// streams run work in the call, this returns once the transfer is in.
  void wait(Stream& stream, std::uint64_t transfer) {
    detail::wait_on_ring(core_.get(), stream, transfer);
  }
  /// The 0.1 argument order, kept for one release (CHANGELOG, "Deprecated").
  [[deprecated("kodo 0.2 takes the stream first: wait(stream, transfer)")]]
  void wait(std::uint64_t transfer, Stream& stream) {
    wait(stream, transfer);
  }

 private:
  friend class Channel;
  explicit ReceiveRing(std::shared_ptr<detail::RingCore> core) : core_(std::move(core)) {}
  void stop() {
    if (core_) detail::stop_ring(*core_);
  }
  std::shared_ptr<detail::RingCore> core_;
};

/// One end of a link between two work units (WorkUnit::open_channel), for repeated
/// transfers of views. How transfers travel and the rules they follow: docs/concepts.md,
/// "Channels and receive rings".
class Channel {
 public:
  /// A closed channel; assigning it to an open one closes that.
  Channel() = default;
  /// Moves the end; `other` is then closed.
  Channel(Channel&&) noexcept;
  /// Closes this end and takes over `other`'s.
  Channel& operator=(Channel&&) noexcept;
  ~Channel();  ///< receives still posted are cancelled

  /// Sends the contents of `data` to the peer once the work enqueued on this end's
  /// stream so far is done. `sent` (optional) runs when `data` may be written again.
  template <class V>
  void send(const V& data, std::function<void()> sent = {}) {
    send_segment(segment(data), std::allocate_shared<V>(detail::RecycledAllocator<V>{}, data),
                 std::move(sent), false);
  }
  /// The same for data that is complete already (written by the host, or by device
  /// work the caller has fenced): a GPU-aware send to another rank starts at once,
  /// without a trip through the completion engine.
  template <class V>
  void send(const V& data, DataReady, std::function<void()> sent = {}) {
    send_segment(segment(data), std::allocate_shared<V>(detail::RecycledAllocator<V>{}, data),
                 std::move(sent), true);
  }
  /// Posts the receive of the peer's next send into `into`; `received` runs once the
  /// data is in `into` (for a device view: device work then sees it when ordered after
  /// this end's stream, or launched from `received`). `received` takes no argument (the
  /// transfer must fill `into`) or a std::size_t (the elements that arrived).
  template <class V, class F>
  void recv(const V& into, F&& received) {
    using Value = typename V::value_type;
    if constexpr (std::is_invocable_v<F, std::size_t>) {
      recv_segment(segment(into), std::allocate_shared<V>(detail::RecycledAllocator<V>{}, into),
                   sizeof(Value), false,
                   detail::recycled([f = std::forward<F>(received)](std::size_t bytes) mutable {
                     f(bytes / sizeof(Value));
                   }));
    } else {
      static_assert(std::is_invocable_v<F>,
                    "kodo: a receive's completion takes nothing or a std::size_t count");
      recv_segment(segment(into), std::allocate_shared<V>(detail::RecycledAllocator<V>{}, into),
                   sizeof(Value), true,
                   detail::recycled([f = std::forward<F>(received)](std::size_t) mutable { f(); }));
    }
  }

  /// Makes this channel's receives a ring over `buffers` (at least one; each receive
  /// takes up to a buffer's size): `on_arrival(const Arrival<V>&)` runs for each
  /// transfer, in transfer order. The ring takes over the channel's receives: open it
  /// before any recv(), and use no recv() after.
  template <class V, class F>
  ReceiveRing<V> open_ring(std::vector<V> buffers, F&& on_arrival) {
    static_assert(std::is_invocable_v<F&, const Arrival<V>&>,
                  "kodo: a ring's on_arrival takes a const kodo::Arrival<V>&");
    using Value = typename V::value_type;
    auto views = std::make_shared<const std::vector<V>>(std::move(buffers));
    std::vector<detail::Segment> segments;
    for (const V& v : *views) segments.push_back(segment(v));
    auto hand = [views, f = std::forward<F>(on_arrival)](std::uint64_t transfer, std::size_t bytes,
                                                         std::size_t buffer) mutable {
      f(Arrival<V>{transfer, bytes / sizeof(Value), (*views)[buffer]});
    };
    return ReceiveRing<V>(start_ring(std::move(segments), views, sizeof(Value), std::move(hand)));
  }

  /// Whether this end is open (opened, and not closed or moved from).
  bool is_open() const { return end_ != nullptr; }
  bool is_local() const;  ///< the peer is on this rank

 private:
  template <class D>
  friend class WorkUnit;
  friend class detail::RankProgram;
  Channel(detail::ChannelHost& host, const detail::LinkSpec& link);

  template <class V>
  static detail::Segment segment(const V& v) {
    return detail::view_segment(v, "a view sent or received on a channel");
  }
  void send_segment(detail::Segment data, std::shared_ptr<const void> keep,
                    std::function<void()> sent, bool ready);
  void recv_segment(detail::Segment into, std::shared_ptr<const void> keep, std::size_t element,
                    bool exact, std::function<void(std::size_t)> received);
  std::shared_ptr<detail::RingCore> start_ring(
      std::vector<detail::Segment> buffers, std::shared_ptr<const void> keep, std::size_t element,
      std::function<void(std::uint64_t, std::size_t, std::size_t)> hand);

  std::shared_ptr<detail::ChannelEnd> end_;
};

}  // namespace kodo

// What channels need of the runtime, and the links and rings kodo's sources keep.
#include <kodo/comm/detail/channel_impl.hpp>
