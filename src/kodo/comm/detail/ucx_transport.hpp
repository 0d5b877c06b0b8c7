// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Rank-to-rank transfers over UCX.
//
// Messages (entry-method calls, reductions) are UCX active messages. Their arguments
// are copied out of UCX (eager) or received into a buffer of our own (rendezvous). A
// message whose arguments include views carries the arguments in the active-message
// header and the views' memory as its data; the receiving runtime checks the arguments
// and takes the destination views from its pool (`Prepare`) before any data is placed.
// - Host views of at most KODO_EAGER_BYTES in all (default 8 KiB; 0: never) travel
//   eagerly, with the message: no round trip before the data. UCX holds that data in
//   host memory only during its callback: it is copied into host views at once. Device
//   views go by rendezvous whatever their size (measured faster on GPUs); eager data
//   for a device view, should it come, is staged (`LandEager`: pinned host memory, then
//   an asynchronous copy) and the message delivered once it is in place.
// - Larger views travel by rendezvous: UCX moves the data straight into the views,
//   device to device where the memory is on a GPU.
//
// Channels use tagged sends and pre-posted tagged receives (channel.hpp).
//
// Worker addresses are exchanged over MPI at start-up; endpoints are created on first
// use. Completions are reported from inside progress(): callbacks only queue work,
// nothing is dispatched from within UCX.
//
// What arrives is checked before it is used (wire.hpp's header checks, lengths against
// kMaxArgumentBytes and against what the arguments describe); any exception inside a
// UCX callback becomes a job-ending error naming the peer and the problem, never an
// exception through UCX.

#include <kodo/comm/detail/wire.hpp>

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kodo::detail {

// kodo's receive tests and fuzz (test/test_access.hpp) enter the receive path and
// fault_report() as UCX would, with forged input over an endpoint() they choose; they
// land a rendezvous message's data themselves (a made-up message has nothing for UCX to
// pull), and read the calls counted by protocol. Nothing else of theirs needs a friend.
struct TestAccess;

// KODO_EAGER_BYTES: its default, and its largest value.
inline constexpr std::uint64_t kDefaultEagerBytes = 8192, kMaxEagerBytes = std::uint64_t{64} << 20;

class UcxTransport {
 public:
  using Deliver = std::function<void(Message&&)>;
  // Rebuilds a message with views from its header and arguments: sets message.local
  // and returns the memory its views' data (`view_data` bytes in all) must land in, in
  // order. Throws kodo::Error naming what does not fit.
  using Prepare = std::function<std::vector<Segment>(Message&, std::uint64_t view_data)>;
  // Places view data that came with its message (eager) in `into`, which Prepare
  // returned, and delivers the message once the data is there. `data` is UCX's memory,
  // valid only during the call.
  using LandEager =
      std::function<void(Message&&, const std::vector<Segment>& into, const std::byte* data)>;
  // Checks what a message without views names before a buffer of `bytes` is made for
  // its arguments (a rendezvous); throws kodo::Error naming what does not fit.
  using Admit = std::function<void(const MessageHeader&, std::uint64_t bytes)>;
  // Completion of a tagged transfer: status and received length.
  using TagDone = std::function<void(ucs_status_t, std::size_t)>;

  // Reads KODO_EAGER_BYTES and KODO_UCX_ERROR_MODE; throws kodo::Error for bad values.
  UcxTransport(MPI_Comm comm, Deliver deliver, Prepare prepare, LandEager land_eager, Admit admit);
  ~UcxTransport();
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  // Starts sending; the transport owns the message until the send completes.
  void send(int rank, Message&& message);

  // Sends `data` with `tag` to `rank`; `done` runs (from progress(), or at once when
  // the send completes in place) when the buffer may be reused.
  void tag_send(int rank, std::uint64_t tag, const Segment& data, TagDone done);
  // Posts a receive of the message with exactly `tag` into `into`; `done` runs from
  // progress(), or before this returns when the message is already here. Returns a
  // handle for cancel(), or nullptr when `done` has run.
  void* tag_recv(std::uint64_t tag, const Segment& into, TagDone done);
  // Cancels a posted receive whose `done` has not run yet (it then runs with
  // UCS_ERR_CANCELED).
  void cancel(void* handle);

  // A tagged message that arrived with no receive posted for it, whose tag matches
  // `tag` in the bits set in `mask` (it stays where it is): its tag and length.
  std::optional<std::pair<std::uint64_t, std::size_t>> probe(std::uint64_t tag, std::uint64_t mask);
  // Takes the message `probe` found (`tag`, `bytes` long) out of UCX and drops it: its
  // receive lands in one scratch buffer of this rank's, cut to that buffer's size, so
  // dropping any number of messages of any size costs no more memory.
  void drop_tagged(std::uint64_t tag, std::size_t bytes);

  // Tells `rank` that this rank is ending the job because of `what` (a fault both
  // ranks are concerned in), so that it prints it too, and gives it up to about a
  // second to do so. The peer prints `what` and aborts the job.
  void report_fault(int rank, const std::string& what);

  // The transports (UCX's names, each with its device: "rc_mlx5/mlx5_0:1") this rank's
  // endpoint to `rank` uses, space-separated; connects to `rank` if it was not yet.
  std::string transports_to(int rank);

  // Drives UCX; returns the number of events processed.
  unsigned progress();

  // Whether UCX here moves memory of `kind` (a UCX built without CUDA or ROCm support,
  // or whose transports were left out by UCX_TLS, does not move device memory).
  bool carries(MemoryKind kind) const;

  // Completes outstanding sends, cancels receives nobody will match and closes every
  // endpoint. Collective over the communicator: no rank tears down its worker while a
  // peer may still flush into it. `quiet`: every message sent in the job was processed
  // (otherwise sends are not waited for and endpoints go with the worker).
  void shutdown(bool quiet);

 private:
  struct InFlight;
  struct TagOp;

  friend struct TestAccess;
  ucp_ep_h endpoint(int rank);
  // `drop_tagged`: meanwhile, tagged messages are taken out of UCX and dropped (the end).
  void progressing_barrier(bool drop_tagged = false);
  void drop_tagged_messages();
  // A message as UCX hands it over: take() it, then pull() what is still to come.
  void receive(const void* header, size_t header_length, void* data, size_t length,
               const ucp_am_recv_param_t* param);
  // A rendezvous message read and admitted, and where its data must land.
  struct Pending {
    Message message;
    std::vector<Segment> into;
  };
  // Reads a message and checks it; delivers it (or lands its eager view data) when all
  // of it is here, and returns what to pull when its data is still to come (rendezvous).
  // Throws kodo::Error for a message it refuses.
  std::optional<Pending> take(const void* header, size_t header_length, void* data, size_t length,
                              const ucp_am_recv_param_t* param);
  // Why the message of `param` did not come over the connection of rank `claimed` (what
  // its header says), or "" when it did.
  std::string sender_problem(int claimed, const ucp_am_recv_param_t* param);
  // What a peer's fault report that arrived as given says, made safe to print: its
  // text, or why it is malformed or forged.
  std::string fault_report(const void* header, size_t header_length, const void* data,
                           size_t length, const ucp_am_recv_param_t* param);
  void pull(Message&& message, const std::vector<Segment>& into, void* data);
  static ucs_status_t on_fault(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t on_am(void* arg, const void* header, size_t header_length, void* data,
                            size_t length, const ucp_am_recv_param_t* param);
  static void on_send_done(void* request, ucs_status_t status, void* user_data);
  static void on_recv_done(void* request, ucs_status_t status, size_t length, void* user_data);
  static void on_tag_send_done(void* request, ucs_status_t status, void* user_data);
  static void on_tag_recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                               void* user_data);
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  Deliver deliver_;
  Prepare prepare_;
  LandEager land_eager_;
  Admit admit_;
  std::uint64_t eager_bytes_ = kDefaultEagerBytes;  // views up to this size travel eagerly
  // Calls with views received, by protocol (for tests).
  std::uint64_t eager_calls_ = 0, rendezvous_calls_ = 0;
  ucp_context_h context_ = nullptr;
  std::uint64_t memory_types_ = 0;  // UCX's, a bit per ucs_memory_type_t
  ucp_worker_h worker_ = nullptr;
  std::size_t max_am_header_ = 0;
  std::vector<std::vector<std::byte>> peer_addresses_;
  std::vector<ucp_ep_h> endpoints_;
  std::unordered_map<ucp_ep_h, int> endpoint_ranks_;  // the rank of each of endpoints_
  struct Peer {
    UcxTransport* transport;
    int rank;
  };
  std::vector<Peer> peers_;  // error-callback argument of each endpoint
  std::size_t pending_sends_ = 0;
  std::unordered_set<void*> posted_recvs_;  // tagged receives not yet completed
  bool completed_while_posting_ = false;
  bool shutting_down_ = false;
  std::vector<std::byte> drop_scratch_;  // where dropped messages land (drop_tagged)
  std::size_t dropped_at_end_ = 0;
  bool peer_errors_ = false;  // UCP_ERR_HANDLING_MODE_PEER on endpoints (KODO_UCX_ERROR_MODE)
};

}  // namespace kodo::detail
