#pragma once
// Channels: persistent links between two work units for repeated transfers of views
// (halos), with receives posted in advance into the views the data must land in.
//
//   kodo::Channel c = open_channel(neighbour_index, comm_stream);   // in both units
//   c.recv(ghost_buffer, [this] { on_face(); });     // posted now, matched later
//   pack(comm_stream, ...); c.send(face_buffer);     // sent once the pack is done
//
// The k-th send on one end lands in the buffer of the k-th receive posted on the other
// end, whatever order the messages travel in; several transfers may be in flight in
// each direction, and their completions may run in any order. Completion reaches the
// unit from the scheduler loop, never from inside UCX, and no call blocks the rank.
//
// The receiver always knows how much arrived: a completion taking no argument accepts
// only a transfer that fills its view exactly; one taking a std::size_t is told the
// number of elements that arrived (up to the view's size). Anything else (more than
// the view holds, a partial element, a short transfer to a completion that takes no
// count) ends the job with an error naming the link and both sizes.
//
// Transport:
// - units on different ranks: UCX tagged messages. A receive is posted into the
//   destination view itself (device memory stays on the device), so no metadata round
//   trip precedes the data. The memory type of the view's Kokkos memory space is given
//   to UCX as a hint.
// - units on the same rank: a device copy on the sending end's stream, no UCX.
// - CommMode::host_staged (for comparison, or networks without GPU support): the
//   sender copies the view to pinned host memory on its stream, sends from there, and
//   the receiver copies from pinned host memory into the view on its stream.
//
// Rules:
// - Receives are matched to sends in the order they are posted; completions may run in
//   any order, so post from a completion only in transfer order (see Jacobi3D's block).
// - A receive's view must be idle on the device when the receive is posted: data from
//   another rank, or a same-rank copy on the sender's stream, is not ordered after work
//   on the receiver's stream.
// - Both ends of a link are opened (units built) before anything is sent on it; a link
//   is opened once: to open it again, first close the old Channel (assign Channel{}).
// - Closing a channel with transfers still to come leaves them unprocessed, and run()
//   waiting for them.
// - Copies between two host views (host-staged or same-rank) are made on the calling
//   thread after the stream's work, not asynchronously.
//
// Tags (64 bits), unique per ordered pair of units, port and transfer in flight:
//   bits 63..52 collection id (< 4096)     bits 51..36 receiving unit (linear, < 2^16)
//   bits 35..20 sending unit (linear)      bits 19..16 port (< 16)
//   bits 15..0  transfer number on that link, modulo 2^16
// Tagged messages are matched on the full tag, so up to 65,536 transfers may be in
// flight on one link in each direction. Entry-method messages travel as UCX active
// messages and never meet these tags. Channels outside these limits are refused when
// they are opened.

#include "../backends/memory.hpp"
#include "../backends/stream.hpp"
#include "../core/error.hpp"
#include "../core/index.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace kodo {

enum class CommMode { device, host_staged };

// "device" or "host"; throws kodo::Error for anything else.
CommMode parse_comm_mode(std::string_view text);
const char* to_string(CommMode mode);

// Tag for Channel::send: the data is complete now (no device work on it is pending).
struct DataReady {};
inline constexpr DataReady data_ready{};

template <class D>
class WorkUnit;

namespace detail {

class UcxTransport;
struct ChannelEnd;

// The same-rank ends of one runtime's channels, by (collection, receiving unit, sending
// unit, port) of what they receive.
using ChannelTable =
    std::map<std::tuple<std::uint32_t, std::int64_t, std::int64_t, int>, ChannelEnd*>;

// What channels need of the scheduler above them (implemented by the runtime).
class ChannelHost {
 public:
  virtual int rank() const = 0;
  // Announces an event that some rank will run later through queue_callback(): it
  // counts as a message in flight for termination until it has run.
  virtual void expect_event() = 0;
  // Runs `callback` from the scheduler loop, in arrival order with messages; completes
  // an event announced by expect_event() (here or on another rank).
  virtual void queue_callback(std::function<void()> callback) = 0;
  // The same for a completion told a size (a receive told the bytes that arrived),
  // without wrapping it in another function.
  virtual void queue_callback(std::function<void(std::size_t)> callback, std::size_t value) = 0;
  // Runs `continuation` from the scheduler loop once the work enqueued on `stream` so
  // far is done.
  virtual void when_done(Stream& stream, std::function<void()> continuation) = 0;
  virtual UcxTransport& transport() = 0;
  virtual ChannelTable& channel_table() = 0;

 protected:
  ~ChannelHost() = default;
};

// Where a link goes: both units (linear indices into the collection's `shape`), the
// peer's rank, the port, the stream its copies and sends are ordered on.
struct LinkSpec {
  std::uint32_t collection;
  Extent3 shape;
  Index3 self, peer;
  int peer_rank;
  int port;
  Stream* stream;
  CommMode mode;
};

}  // namespace detail

class Channel {
 public:
  Channel() = default;
  Channel(Channel&&) noexcept;
  Channel& operator=(Channel&&) noexcept;
  ~Channel();  // receives still posted are cancelled

  // Sends the contents of `data` to the peer once the work enqueued on this end's
  // stream so far is done. `sent` (optional) runs when `data` may be written again.
  template <class V>
  void send(const V& data, std::function<void()> sent = {}) {
    send_segment(segment(data), std::make_shared<V>(data), std::move(sent), false);
  }
  // The same for data that is complete already (written by the host, or by device
  // work the caller has fenced): a GPU-aware send to another rank starts at once,
  // without a trip through the completion engine.
  template <class V>
  void send(const V& data, DataReady, std::function<void()> sent = {}) {
    send_segment(segment(data), std::make_shared<V>(data), std::move(sent), true);
  }
  // Posts the receive of the peer's next send into `into`; `received` runs once the
  // data is in `into` (for a device view: device work then sees it when ordered after
  // this end's stream, or launched from `received`). `received` takes no argument (the
  // transfer must fill `into`) or a std::size_t (the elements that arrived).
  template <class V, class F>
  void recv(const V& into, F&& received) {
    using Value = typename V::value_type;
    if constexpr (std::is_invocable_v<F, std::size_t>) {
      recv_segment(segment(into), std::make_shared<V>(into), sizeof(Value), false,
                   [f = std::forward<F>(received)](std::size_t bytes) mutable {
                     f(bytes / sizeof(Value));
                   });
    } else {
      static_assert(std::is_invocable_v<F>,
                    "kodo: a receive's completion takes nothing or a std::size_t count");
      recv_segment(segment(into), std::make_shared<V>(into), sizeof(Value), true,
                   [f = std::forward<F>(received)](std::size_t) mutable { f(); });
    }
  }

  bool is_open() const { return end_ != nullptr; }
  bool is_local() const;  // the peer is on this rank

 private:
  template <class D>
  friend class WorkUnit;
  Channel(detail::ChannelHost& host, const detail::LinkSpec& link);

  template <class V>
  static Segment segment(const V& v) {
    static_assert(Kokkos::is_view<V>::value, "kodo: channels carry Kokkos views");
    if (v.size() != 0 && !v.span_is_contiguous())
      throw Error("a view sent or received on a channel must be contiguous");
    return Segment{const_cast<typename V::non_const_value_type*>(v.data()),
                   v.size() * sizeof(typename V::value_type),
                   memory_kind<typename V::memory_space>()};
  }
  void send_segment(Segment data, std::shared_ptr<const void> keep, std::function<void()> sent,
                    bool ready);
  void recv_segment(Segment into, std::shared_ptr<const void> keep, std::size_t element, bool exact,
                    std::function<void(std::size_t)> received);

  std::shared_ptr<detail::ChannelEnd> end_;
};

}  // namespace kodo
