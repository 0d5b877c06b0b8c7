#pragma once
// What kodo's own tests reach inside the runtime: the receive path of a running rank,
// exactly as UCX enters it for an eager active message, with errors thrown instead of
// ending the job, so that many malformed messages can be tried in one process.

#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/kodo.hpp>
#include <kodo/tasking/detail/scheduler.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace kodo::detail {

struct TestAccess {
  static Scheduler& scheduler(Runtime& runtime) { return runtime.scheduler(); }

  // Hands `header` and `data` to the transport as an eager active message, then
  // dispatches what it delivers. Throws kodo::Error for a message that is refused.
  // Returns the number of messages dispatched (0 or 1).
  static int receive(Runtime& runtime, const std::vector<std::byte>& header,
                     const std::vector<std::byte>& data) {
    Scheduler& s = runtime.scheduler();
    ucp_am_recv_param_t param{};
    param.recv_attr = 0;  // eager: the data is here
    const std::size_t before = s.queue_.size();
    s.transport_->receive(header.data(), header.size(), const_cast<std::byte*>(data.data()),
                          data.size(), &param);
    int dispatched = 0;
    while (s.queue_.size() > before) {
      Message m = std::move(s.queue_.back());
      s.queue_.pop_back();
      s.dispatch_checked(m);
      ++dispatched;
    }
    return dispatched;
  }

  // Announces a rendezvous message of `length` bytes without views, as UCX does before
  // any of its data has moved; only for messages that must be refused (an admitted one
  // would be received from a descriptor that does not exist).
  static void announce_rendezvous(Runtime& runtime, const MessageHeader& h, std::size_t length) {
    ucp_am_recv_param_t param{};
    param.recv_attr = UCP_AM_RECV_ATTR_FLAG_RNDV;
    runtime.scheduler().transport_->receive(&h, sizeof h, nullptr, length, &param);
  }

  // Queues `f` as if a message had arrived that no rank counted as sent.
  static void inject_uncounted(Runtime& runtime, std::function<void()> f) {
    Scheduler& s = runtime.scheduler();
    s.queue_callback(std::move(f));
  }
  static void count_sent(Runtime& runtime) { runtime.scheduler().termination_.count_sent(); }

  // The channel registry (what peers announced of links).
  static ChannelRegistry& channels(Runtime& runtime) { return *runtime.scheduler().channels_; }
  // The pool the views of this rank's calls from other ranks come from.
  static ViewPool& pool(Runtime& runtime) { return runtime.scheduler().pool_; }
  // Makes eager data for host views take the path of device views (pinned staging, a
  // copy on a stream, the call queued by the completion engine), which a host build
  // would not run otherwise.
  static void stage_host_views(Runtime& runtime, bool on) {
    runtime.scheduler().stage_host_views_ = on;
  }
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
