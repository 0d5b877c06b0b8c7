// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What kodo's own tests reach inside the runtime: the receive path of a running rank,
// exactly as UCX enters it for an eager active message, with errors thrown instead of
// ending the job, so that many malformed messages can be tried in one process. The
// runtime itself names none of this: its scheduler is reached as its channel host
// (state_records.hpp's RuntimeAccess); the scheduler and the transport befriend
// TestAccess for what no other path reaches (their headers say what).

#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/kodo.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <vector>

namespace kodo::detail {

struct TestAccess {
  // The runtime's channel host is its scheduler.
  static Scheduler& scheduler(Runtime& runtime) {
    return static_cast<Scheduler&>(RuntimeAccess::channel_host(runtime));
  }
  // The rank's kernel batches waiting for the end of the turn (kernel_batch.hpp).
  static BatchLauncher& batches(Runtime& runtime) { return scheduler(runtime).batches_; }

  // The connection a message claiming to come from the rank in `header` arrives by:
  // that rank's endpoint here (as UCX gives it for an honest sender), or `connection`'s
  // when not -1 (a sender that misstates its rank).
  static ucp_am_recv_param_t came_by(Runtime& runtime, const void* header, std::size_t bytes,
                                     int connection) {
    UcxTransport& t = transport(runtime);
    int claimed = -1;
    if (bytes >= sizeof(MessageHeader))
      std::memcpy(&claimed,
                  static_cast<const std::byte*>(header) + offsetof(MessageHeader, source_rank),
                  sizeof claimed);
    const int by = connection >= 0 ? connection : claimed;
    ucp_am_recv_param_t param{};
    // (A rank's own endpoint only when asked for: no rank sends itself a message.)
    if (by >= 0 && by < runtime.size() && (by != runtime.rank() || connection >= 0)) {
      param.recv_attr = UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
      param.reply_ep = t.endpoint(by);
    }
    return param;
  }

  // Hands `header` and `data` to the transport as an eager active message (over the
  // connection of the rank it names, or of `connection`), then dispatches what it
  // delivers. Throws kodo::Error for a message that is refused. Returns the number of
  // messages dispatched (0 or 1).
  static int receive(Runtime& runtime, const std::vector<std::byte>& header,
                     const std::vector<std::byte>& data, int connection = -1) {
    return receive_with(runtime, header, data,
                        came_by(runtime, header.data(), header.size(), connection));
  }
  // The same with UCX's description of the message as given (`param`; eager).
  static int receive_with(Runtime& runtime, const std::vector<std::byte>& header,
                          const std::vector<std::byte>& data, ucp_am_recv_param_t param) {
    return dispatch_delivered(runtime, [&](UcxTransport& t) {
      t.receive(header.data(), header.size(), const_cast<std::byte*>(data.data()), data.size(),
                &param);
    });
  }
  // The same for a message that comes by rendezvous with `length` bytes of data: UCX
  // announces it before any data has moved; if it is admitted, its data lands from
  // `data` (whose size must then be `length`; empty: nothing lands, buffers keep what
  // they held) where UCX would pull it from the sender (a made-up message has nothing
  // to pull from). `unnamed`: it came without UCX's reply endpoint.
  static int receive_rendezvous(Runtime& runtime, const std::vector<std::byte>& header,
                                const std::vector<std::byte>& data, std::size_t length,
                                int connection = -1, bool unnamed = false) {
    ucp_am_recv_param_t param = unnamed
                                    ? ucp_am_recv_param_t{}
                                    : came_by(runtime, header.data(), header.size(), connection);
    param.recv_attr |= UCP_AM_RECV_ATTR_FLAG_RNDV;
    void* landing = data.empty() ? nullptr : const_cast<std::byte*>(data.data());
    if (landing && data.size() != length) throw std::logic_error("receive_rendezvous: data");
    return dispatch_delivered(runtime, [&](UcxTransport& t) {
      auto admitted = t.take(header.data(), header.size(), landing, length, &param);
      if (!admitted) throw std::logic_error("receive_rendezvous: taken as eager");
      for (const auto* from = static_cast<const std::byte*>(landing);
           const Segment& s : admitted->into)
        if (from && s.bytes != 0) {
          std::memcpy(s.data, from, s.bytes);
          from += s.bytes;
        }
      t.deliver_(std::move(admitted->message));
    });
  }

  // What this rank prints (before it ends the job) for a fault report that arrived
  // with `header` and `text`, over the connection of `connection` (-1: none).
  static std::string fault_report(Runtime& runtime, const std::vector<std::byte>& header,
                                  const std::string& text, int connection, bool rendezvous) {
    UcxTransport& t = transport(runtime);
    ucp_am_recv_param_t param{};
    if (connection >= 0) {
      param.recv_attr = UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
      param.reply_ep = t.endpoint(connection);
    }
    if (rendezvous) param.recv_attr |= UCP_AM_RECV_ATTR_FLAG_RNDV;
    return t.fault_report(header.data(), header.size(), text.data(), text.size(), &param);
  }

  // Announces a rendezvous message of `length` bytes without views, as UCX does before
  // any of its data has moved; only for messages that must be refused (an admitted one
  // would have nothing to pull its data from).
  static void announce_rendezvous(Runtime& runtime, const MessageHeader& h, std::size_t length) {
    ucp_am_recv_param_t param = came_by(runtime, &h, sizeof h, -1);
    param.recv_attr |= UCP_AM_RECV_ATTR_FLAG_RNDV;
    if (transport(runtime).take(&h, sizeof h, nullptr, length, &param))
      throw std::logic_error("announce_rendezvous: admitted");
  }

  // Runs `receive` (which hands the transport a message, or polls), then dispatches
  // what it queued. Returns the number of messages dispatched.
  template <class Receive>
  static int dispatch_delivered(Runtime& runtime, Receive&& receive) {
    Scheduler& s = scheduler(runtime);
    const std::size_t before = s.queue_.size();
    // What was queued before a refusal runs too (a ring's transfers before a bad one).
    std::exception_ptr refusal;
    try {
      receive(s.transport());
    } catch (...) {
      refusal = std::current_exception();
    }
    // In the order they were queued (a ring's arrivals are released in order).
    std::vector<Message> delivered;
    while (s.queue_.size() > before) {
      delivered.push_back(std::move(s.queue_.back()));
      s.queue_.pop_back();
    }
    for (auto m = delivered.rbegin(); m != delivered.rend(); ++m) s.dispatch_checked(*m);
    if (refusal) std::rethrow_exception(refusal);
    return static_cast<int>(delivered.size());
  }

  // Queues `f` as if a message had arrived that no rank counted as sent.
  static void inject_uncounted(Runtime& runtime, std::function<void()> f) {
    scheduler(runtime).queue_callback(std::move(f));
  }
  static void count_sent(Runtime& runtime) { scheduler(runtime).expect_event(); }

  static UcxTransport& transport(Runtime& runtime) { return scheduler(runtime).transport(); }
  // Polls this rank's same-node links (as the loop does), then runs what that queued.
  static std::size_t poll_node_links(Runtime& runtime) {
    Scheduler& s = scheduler(runtime);
    std::size_t moved = 0;
    dispatch_delivered(runtime, [&](UcxTransport&) {
      moved = kodo::detail::poll_node_links(s.channels(), *s.node());
    });
    return moved;
  }
  // The channel registry (what peers announced of links).
  static ChannelRegistry& channels(Runtime& runtime) { return scheduler(runtime).channels(); }
  // The pool the views of this rank's calls from other ranks come from.
  static ViewPool& pool(Runtime& runtime) { return scheduler(runtime).pool(); }
  // Calls with views this rank has received with their data (eager) and by rendezvous,
  // and the threshold its own sends use (KODO_EAGER_BYTES).
  static std::uint64_t eager_calls(Runtime& runtime) { return transport(runtime).eager_calls_; }
  static std::uint64_t rendezvous_calls(Runtime& runtime) {
    return transport(runtime).rendezvous_calls_;
  }
  static std::uint64_t eager_bytes(Runtime& runtime) { return transport(runtime).eager_bytes_; }

  // What a turn would count as left to run for its recording (up to 2), with messages of
  // `headers` queued first; they are taken away again, undispatched.
  static std::size_t turn_pieces_with(Runtime& runtime, const std::vector<MessageHeader>& headers) {
    Scheduler& s = scheduler(runtime);
    for (const MessageHeader& h : headers) {
      Message m;
      m.header = h;
      s.queue_.push_front(std::move(m));
    }
    const std::size_t pieces = s.turn_pieces();
    for (std::size_t i = 0; i < headers.size(); ++i) s.queue_.pop_front();
    return pieces;
  }

  // Runs an already built message through the checked dispatch, as if it had come
  // from another rank.
  static void dispatch_from_wire(Runtime& runtime, Message&& m) {
    m.from_wire = true;
    scheduler(runtime).dispatch_checked(m);
  }
};

}  // namespace kodo::detail
