// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What kodo's own tests reach inside the runtime: the receive path of a running rank,
// exactly as UCX enters it for an eager active message, with errors thrown instead of
// ending the job, so that many malformed messages can be tried in one process.

#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/kodo.hpp>
#include <kodo/tasking/detail/scheduler.hpp>

#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <vector>

namespace kodo::detail {

struct TestAccess {
  static Scheduler& scheduler(Runtime& runtime) { return runtime.scheduler(); }
  // The rank's kernel batches waiting for the end of the turn (kernel_batch.hpp).
  static BatchLauncher& batches(Runtime& runtime) { return runtime.scheduler().batches_; }

  // The connection a message claiming to come from the rank in `header` arrives by:
  // that rank's endpoint here (as UCX gives it for an honest sender), or `connection`'s
  // when not -1 (a sender that misstates its rank).
  static ucp_am_recv_param_t came_by(Runtime& runtime, const void* header, std::size_t bytes,
                                     int connection) {
    UcxTransport& t = *runtime.scheduler().transport_;
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
  // they held). `unnamed`: it came without UCX's reply endpoint.
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
      t.rendezvous_lands_in_place_ = true;
      try {
        t.receive(header.data(), header.size(), landing, length, &param);
      } catch (...) {
        t.rendezvous_lands_in_place_ = false;
        throw;
      }
      t.rendezvous_lands_in_place_ = false;
    });
  }

  // What this rank prints (before it ends the job) for a fault report that arrived
  // with `header` and `text`, over the connection of `connection` (-1: none).
  static std::string fault_report(Runtime& runtime, const std::vector<std::byte>& header,
                                  const std::string& text, int connection, bool rendezvous) {
    UcxTransport& t = *runtime.scheduler().transport_;
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
  // would be received from a descriptor that does not exist).
  static void announce_rendezvous(Runtime& runtime, const MessageHeader& h, std::size_t length) {
    ucp_am_recv_param_t param = came_by(runtime, &h, sizeof h, -1);
    param.recv_attr |= UCP_AM_RECV_ATTR_FLAG_RNDV;
    runtime.scheduler().transport_->receive(&h, sizeof h, nullptr, length, &param);
  }

  // Runs `receive` (which hands the transport a message, or polls), then dispatches
  // what it queued. Returns the number of messages dispatched.
  template <class Receive>
  static int dispatch_delivered(Runtime& runtime, Receive&& receive) {
    Scheduler& s = runtime.scheduler();
    const std::size_t before = s.queue_.size();
    // What was queued before a refusal runs too (a ring's transfers before a bad one).
    std::exception_ptr refusal;
    try {
      receive(*s.transport_);
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
    Scheduler& s = runtime.scheduler();
    s.queue_callback(std::move(f));
  }
  static void count_sent(Runtime& runtime) { runtime.scheduler().termination_.count_sent(); }

  static UcxTransport& transport(Runtime& runtime) { return *runtime.scheduler().transport_; }
  // Makes a fault found with a peer (ChannelHost::fail_with_peer: a same-node ring's words
  // or sizes) a kodo::Error thrown where it is found, instead of the end of the job.
  static void throw_peer_failures(Runtime& runtime, bool on) {
    runtime.scheduler().throw_peer_failures_ = on;
  }
  // Polls this rank's same-node links (as the loop does), then runs what that queued.
  static std::size_t poll_node_links(Runtime& runtime) {
    Scheduler& s = runtime.scheduler();
    std::size_t moved = 0;
    dispatch_delivered(runtime, [&](UcxTransport&) {
      moved = kodo::detail::poll_node_links(*s.channels_, *s.node_);
    });
    return moved;
  }
  // The channel registry (what peers announced of links).
  static ChannelRegistry& channels(Runtime& runtime) { return *runtime.scheduler().channels_; }
  // The pool the views of this rank's calls from other ranks come from.
  static ViewPool& pool(Runtime& runtime) { return runtime.scheduler().pool_; }
  // Calls with views this rank has received with their data (eager) and by rendezvous,
  // and the threshold its own sends use (KODO_EAGER_BYTES).
  static std::uint64_t eager_calls(Runtime& runtime) {
    return runtime.scheduler().transport_->eager_calls_;
  }
  static std::uint64_t rendezvous_calls(Runtime& runtime) {
    return runtime.scheduler().transport_->rendezvous_calls_;
  }
  static std::uint64_t eager_bytes(Runtime& runtime) {
    return runtime.scheduler().transport_->eager_bytes_;
  }

  // Runs an already built message through the checked dispatch, as if it had come
  // from another rank.
  static void dispatch_from_wire(Runtime& runtime, Message&& m) {
    m.from_wire = true;
    runtime.scheduler().dispatch_checked(m);
  }
};

}  // namespace kodo::detail
