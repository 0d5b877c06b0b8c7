#pragma once
// Rank-to-rank messages over UCX active messages.
//
// Worker addresses are exchanged over MPI at start-up; endpoints are created on first
// use. Arrivals are copied out of UCX (eager) or received into a buffer of our own
// (rendezvous) and handed to the `deliver` callback from inside progress(); the
// callback only queues them: nothing is dispatched from within UCX.

#include "../tasking/message.hpp"

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <functional>
#include <string>
#include <vector>

namespace kodo::detail {

class UcxTransport {
 public:
  using Deliver = std::function<void(Message&&)>;

  UcxTransport(MPI_Comm comm, Deliver deliver);
  ~UcxTransport();
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  // Starts sending; the transport owns the message until the send completes.
  void send(int rank, Message&& message);

  // Drives UCX; returns the number of events processed.
  unsigned progress();

  // Completes outstanding sends and closes every endpoint. Collective over the
  // communicator: no rank tears down its worker while a peer may still flush into it.
  void shutdown();

 private:
  struct InFlight;

  ucp_ep_h endpoint(int rank);
  void progressing_barrier();
  static ucs_status_t on_am(void* arg, const void* header, size_t header_length, void* data,
                            size_t length, const ucp_am_recv_param_t* param);
  static void on_send_done(void* request, ucs_status_t status, void* user_data);
  static void on_recv_done(void* request, ucs_status_t status, size_t length,
                           void* user_data);
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  MPI_Comm comm_;
  int rank_ = 0;
  Deliver deliver_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<std::vector<std::byte>> peer_addresses_;
  std::vector<ucp_ep_h> endpoints_;
  struct Peer {
    UcxTransport* transport;
    int rank;
  };
  std::vector<Peer> peers_;  // error-callback argument of each endpoint
  std::size_t pending_sends_ = 0;
  bool shutting_down_ = false;
};

}  // namespace kodo::detail
