// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/comm/detail/ucx_transport.hpp>

#include <kodo/comm/detail/ucx_check.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/settings.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace kodo::detail {
namespace {

constexpr unsigned kMessageAmId = 0;
constexpr unsigned kFaultAmId = 1;             // a peer's report of a fault that ends the job
constexpr std::size_t kMaxFaultReport = 4096;  // bytes of text

ucs_memory_type_t ucs_type(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return UCS_MEMORY_TYPE_HOST;
    case MemoryKind::cuda: return UCS_MEMORY_TYPE_CUDA;
    case MemoryKind::cuda_managed: return UCS_MEMORY_TYPE_CUDA_MANAGED;
    case MemoryKind::rocm: return UCS_MEMORY_TYPE_ROCM;
    case MemoryKind::rocm_managed: return UCS_MEMORY_TYPE_ROCM_MANAGED;
  }
  return UCS_MEMORY_TYPE_UNKNOWN;
}

// The data of a message: one segment as a contiguous buffer, several as an I/O vector
// (UCX moves I/O vectors of GPU memory through a slower protocol: calls with one 8 MiB
// view ran at 0.8 GB/s as a vector and 48 GB/s as a buffer on an H200 pair). The
// memory-type hint applies to all segments, so it is given only when they agree (UCX
// looks the pointers up otherwise).
// Returns the buffer and count for the UCX call.
std::pair<void*, std::size_t> describe(const std::vector<Segment>& segments,
                                       std::vector<ucp_dt_iov_t>& iov, ucp_request_param_t& param) {
  bool same = !segments.empty();
  for (const Segment& s : segments) same = same && s.kind == segments.front().kind;
  if (same) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = ucs_type(segments.front().kind);
  }
  if (segments.size() == 1) return {segments.front().data, segments.front().bytes};
  iov.clear();
  for (const Segment& s : segments) iov.push_back(ucp_dt_iov_t{s.data, s.bytes});
  param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  param.datatype = ucp_dt_make_iov();
  return {iov.data(), iov.size()};
}

// Nothing may unwind into UCX: an exception inside one of its callbacks (an
// allocation that fails, a continuation that throws) ends the job, saying where.
template <class F>
void guarded(const char* where, F&& f) noexcept {
  try {
    f();
  } catch (...) {
    fatal(cat(where, ": ", what_of_current()));
  }
}

}  // namespace

// A send in flight owns its message (and the views it carries) until UCX reports
// completion; a rendezvous receive in flight owns the memory UCX is writing into.
struct UcxTransport::InFlight {
  UcxTransport* transport;
  Message message;
  std::vector<ucp_dt_iov_t> iov;
  Bytes header;
};

struct UcxTransport::TagOp {
  UcxTransport* transport;
  TagDone done;
  bool posting = false;  // inside ucp_tag_recv_nbx, which may complete it at once
};

UcxTransport::UcxTransport(MPI_Comm comm, Deliver deliver, Prepare prepare, LandEager land_eager,
                           Admit admit)
    : comm_(comm),
      deliver_(std::move(deliver)),
      prepare_(std::move(prepare)),
      land_eager_(std::move(land_eager)),
      admit_(std::move(admit)),
      eager_bytes_(bytes_setting("KODO_EAGER_BYTES", kDefaultEagerBytes)),
      peer_errors_(choice_setting("KODO_UCX_ERROR_MODE") == "peer") {
  static_assert(setting_info("KODO_EAGER_BYTES").most == kMaxEagerBytes);
  KODO_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  KODO_MPI_CHECK(MPI_Comm_size(comm_, &size_));

  ucp_config_t* config = nullptr;
  KODO_UCX_CHECK(ucp_config_read(nullptr, nullptr, &config));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_TAG;
  params.name = "kodo";
  const ucs_status_t status = ucp_init(&params, config, &context_);
  ucp_config_release(config);  // whether or not ucp_init succeeded
  check_ucx(status, "ucp_init");
  ucp_context_attr_t cattr{};
  cattr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  KODO_UCX_CHECK(ucp_context_query(context_, &cattr));
  memory_types_ = cattr.memory_types;

  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  KODO_UCX_CHECK(ucp_worker_create(context_, &wparams, &worker_));
  ucp_worker_attr_t wattr{};
  wattr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  KODO_UCX_CHECK(ucp_worker_query(worker_, &wattr));
  max_am_header_ = wattr.max_am_header;

  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  am.id = kMessageAmId;
  am.cb = &UcxTransport::on_am;
  am.arg = this;
  am.flags = UCP_AM_FLAG_WHOLE_MSG;
  KODO_UCX_CHECK(ucp_worker_set_am_recv_handler(worker_, &am));
  am.id = kFaultAmId;
  am.cb = &UcxTransport::on_fault;
  KODO_UCX_CHECK(ucp_worker_set_am_recv_handler(worker_, &am));

  // Bootstrap: every rank learns every worker address through MPI.
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  KODO_UCX_CHECK(ucp_worker_get_address(worker_, &address, &address_length));
  int my_length = static_cast<int>(address_length);
  std::vector<int> lengths(size_), offsets(size_);
  KODO_MPI_CHECK(MPI_Allgather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_));
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::vector<std::byte> all(total);
  KODO_MPI_CHECK(MPI_Allgatherv(address, my_length, MPI_BYTE, all.data(), lengths.data(),
                                offsets.data(), MPI_BYTE, comm_));
  ucp_worker_release_address(worker_, address);
  peer_addresses_.resize(size_);
  for (int r = 0; r < size_; ++r)
    peer_addresses_[r].assign(all.begin() + offsets[r], all.begin() + offsets[r] + lengths[r]);
  endpoints_.assign(size_, nullptr);
  for (int r = 0; r < size_; ++r) peers_.push_back(Peer{this, r});
}

UcxTransport::~UcxTransport() {
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

ucp_ep_h UcxTransport::endpoint(int rank) {
  if (endpoints_[rank]) return endpoints_[rank];
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_addresses_[rank].data());
  // Peer error handling turns a dead or unreachable peer into an error callback instead
  // of a send that never completes, but it rules out UCX transports that cannot report
  // peer failure: shared memory among them, so host-memory transfers fall back to TCP,
  // and 8-byte GPU latency rises from 10.9 to 20.6 us on an H200 pair. So it is opt-in
  // (KODO_UCX_ERROR_MODE=peer); by default the launcher ends a job whose rank died.
  params.err_mode = peer_errors_ ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = &UcxTransport::on_ep_error;
  params.err_handler.arg = &peers_[rank];
  if (const ucs_status_t status = ucp_ep_create(worker_, &params, &endpoints_[rank]);
      status != UCS_OK)
    ucx_failed(status, cat("ucp_ep_create (connecting to rank ", rank, ")"));
  endpoint_ranks_.emplace(endpoints_[rank], rank);
  return endpoints_[rank];
}

std::string UcxTransport::transports_to(int rank) {
  std::array<ucp_transport_entry_t, 16> entries{};
  ucp_ep_attr_t attr{};
  attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  attr.transports.entries = entries.data();
  attr.transports.num_entries = static_cast<unsigned>(entries.size());
  attr.transports.entry_size = sizeof(ucp_transport_entry_t);
  KODO_UCX_CHECK(ucp_ep_query(endpoint(rank), &attr));
  std::string names;
  for (unsigned i = 0; i < attr.transports.num_entries && i < entries.size(); ++i) {
    const ucp_transport_entry_t& e = entries[i];
    if (!e.transport_name || !*e.transport_name) continue;
    if (!names.empty()) names += ' ';
    names += e.transport_name;
    if (e.device_name && *e.device_name) names += cat("/", e.device_name);
  }
  return names;
}

void UcxTransport::send(int rank, Message&& message) {
  if (message.attachments.empty() && message.payload.size() > kMaxArgumentBytes)
    throw Error(cat("the arguments of a call take ", message.payload.size(),
                    " bytes, more than kodo's bound of ", kMaxArgumentBytes,
                    " (send large data as views)"));
  auto state = std::make_unique<InFlight>(InFlight{this, std::move(message), {}, {}});
  Message& m = state->message;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &UcxTransport::on_send_done;
  param.user_data = state.get();
  // REPLY: the receiver learns the connection it came by, which is how it knows the sender.
  param.flags = UCP_AM_SEND_FLAG_COPY_HEADER | UCP_AM_SEND_FLAG_REPLY;
  ucs_status_ptr_t request;
  if (m.attachments.empty()) {
    request = ucp_am_send_nbx(endpoint(rank), kMessageAmId, &m.header, sizeof(m.header),
                              m.payload.data(), m.payload.size(), &param);
  } else {
    // Arguments in the header, views' memory as the data. Small views go with the
    // message (eager): no round trip before the data. Larger ones by rendezvous: the
    // receiver pulls the data straight into views from its pool once it has read the
    // header.
    m.header.flags |= kHasAttachments;
    state->header.resize(sizeof(MessageHeader) + m.payload.size());
    std::memcpy(state->header.data(), &m.header, sizeof(MessageHeader));
    std::memcpy(state->header.data() + sizeof(MessageHeader), m.payload.data(), m.payload.size());
    if (state->header.size() > max_am_header_)
      throw Error(cat("the arguments of a call with views take ", state->header.size(),
                      " bytes; UCX carries at most ", max_am_header_,
                      " beside the views (send large data as views)"));
    std::vector<Segment> segments;
    std::uint64_t view_bytes = 0;
    bool all_host = true;
    for (const Attachment& a : m.attachments) {
      segments.push_back(a.segment);
      view_bytes += a.segment.bytes;
      all_host = all_host && a.segment.kind == MemoryKind::host;
    }
    const auto [buffer, count] = describe(segments, state->iov, param);
    // Device views always go by rendezvous: on an H200 pair an eager call of 8 B of GPU
    // memory took 17-21 us (UCX copies it to the host, we copy it back), a rendezvous
    // straight into the pooled view 9-10 us, as fast as a channel.
    const bool eager = all_host && view_bytes <= eager_bytes_;
    param.flags |= eager ? UCP_AM_SEND_FLAG_EAGER : UCP_AM_SEND_FLAG_RNDV;
    request = ucp_am_send_nbx(endpoint(rank), kMessageAmId, state->header.data(),
                              state->header.size(), buffer, count, &param);
  }
  if (request == nullptr) return;  // completed in place; `state` frees the message
  if (UCS_PTR_IS_ERR(request))
    ucx_failed(UCS_PTR_STATUS(request), cat("ucp_am_send_nbx (a message to rank ", rank, ")"));
  ++pending_sends_;
  state.release();  // on_send_done owns it now
}

void UcxTransport::on_send_done(void* request, ucs_status_t status, void* user_data) {
  guarded("while completing a UCX operation", [&] {
    std::unique_ptr<InFlight> state(static_cast<InFlight*>(user_data));
    --state->transport->pending_sends_;
    ucp_request_free(request);
    if (status != UCS_OK && !state->transport->shutting_down_)
      fatal(std::string("a send over UCX failed: ") + ucs_status_string(status));
  });
}

ucs_status_t UcxTransport::on_am(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxTransport*>(arg);
  // Nothing may unwind into UCX: whatever goes wrong with a message ends the job here,
  // naming the rank it claims to come from.
  try {
    self->receive(header, header_length, data, length, param);
  } catch (...) {
    int source = -1;
    if (header_length >= sizeof(MessageHeader))
      std::memcpy(&source,
                  static_cast<const std::byte*>(header) + offsetof(MessageHeader, source_rank),
                  sizeof source);
    fatal(cat("a malformed message arrived (from rank ", source,
              " by its header): ", what_of_current()));
  }
  return UCS_OK;
}

// Who sent a message is what its connection says, not its header. The sender's REPLY flag
// makes UCX hand over the endpoint it came by, and UCX pairs the one endpoint each rank
// opens to the other (by connection number): the endpoint this rank holds for the
// claimed rank must be that one. A connection the peer opened first is the endpoint
// this rank's own to the claimed rank then becomes.
std::string UcxTransport::sender_problem(int claimed, const ucp_am_recv_param_t* param) {
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) || param->reply_ep == nullptr)
    return "sender is unknown: it does not say which connection it came by (sent without UCX's "
           "reply flag)";
  if (endpoints_[static_cast<std::size_t>(claimed)] == param->reply_ep) return {};
  const auto known = endpoint_ranks_.find(param->reply_ep);
  if (known == endpoint_ranks_.end() && endpoint(claimed) == param->reply_ep) return {};
  return cat("field source_rank says rank ", claimed, ", but it came over the connection of ",
             known == endpoint_ranks_.end() ? std::string("another rank")
                                            : cat("rank ", known->second));
}

void UcxTransport::receive(const void* header, size_t header_length, void* data, size_t length,
                           const ucp_am_recv_param_t* param) {
  if (std::optional<Pending> rest = take(header, header_length, data, length, param))
    pull(std::move(rest->message), rest->into, data);
}

std::optional<UcxTransport::Pending> UcxTransport::take(const void* header, size_t header_length,
                                                        void* data, size_t length,
                                                        const ucp_am_recv_param_t* param) {
  if (header_length < sizeof(MessageHeader))
    throw Error(cat("its header has ", header_length, " bytes, fewer than the ",
                    sizeof(MessageHeader), " of a message header"));
  Message message;
  message.from_wire = true;
  std::memcpy(&message.header, header, sizeof(MessageHeader));
  if (const std::string problem = check_received_header(message.header, rank_, size_);
      !problem.empty())
    throw Error(problem);
  if (const std::string problem = sender_problem(message.header.source_rank, param);
      !problem.empty())
    throw Error(problem);
  const bool rendezvous = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  std::vector<Segment> into;
  if (message.header.flags & kHasAttachments) {
    // A call with views: its arguments came in the header; the runtime checks them and
    // takes the views from its pool, and the data lands in them.
    const auto* args = static_cast<const std::byte*>(header) + sizeof(MessageHeader);
    message.payload.assign(args, args + (header_length - sizeof(MessageHeader)));
    if (length > kMaxViewDataBytes)
      throw Error(cat("it carries ", length, " bytes of view data, more than kodo's bound of ",
                      kMaxViewDataBytes));
    into = prepare_(message, length);
    ++(rendezvous ? rendezvous_calls_ : eager_calls_);
    if (!rendezvous) {
      land_eager_(std::move(message), into, static_cast<const std::byte*>(data));
      return std::nullopt;
    }
  } else {
    if (header_length != sizeof(MessageHeader))
      throw Error(cat("its header has ", header_length,
                      " bytes but field flags says no views are attached"));
    if (length > kMaxArgumentBytes)
      throw Error(cat("its arguments take ", length, " bytes, more than kodo's bound of ",
                      kMaxArgumentBytes));
    if (rendezvous) admit_(message.header, length);  // before a buffer is made for it
    message.payload.resize(length);                  // the arguments land in a buffer of our own
    if (!rendezvous) {
      // Eager, the common case: the arguments are here already.
      if (length != 0) std::memcpy(message.payload.data(), data, length);
      deliver_(std::move(message));
      return std::nullopt;
    }
    into.push_back(Segment{message.payload.data(), length, MemoryKind::host});
  }
  return Pending{std::move(message), std::move(into)};
}

// Pulls the data of a rendezvous message into `into` and delivers the message once it
// is there.
void UcxTransport::pull(Message&& message, const std::vector<Segment>& into, void* data) {
  auto state = std::make_unique<InFlight>(InFlight{this, std::move(message), {}, {}});
  ucp_request_param_t rparam{};
  rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rparam.cb.recv_am = &UcxTransport::on_recv_done;
  rparam.user_data = state.get();
  const auto [buffer, count] = describe(into, state->iov, rparam);
  ucs_status_ptr_t request =
      KODO_UCX_CHECK(ucp_am_recv_data_nbx(worker_, data, buffer, count, &rparam));
  if (request == nullptr) {
    deliver_(std::move(state->message));
  } else {
    state.release();  // on_recv_done owns it now
  }
}

void UcxTransport::tag_send(int rank, std::uint64_t tag, const Segment& data, TagDone done) {
  auto op = std::make_unique<TagOp>(TagOp{this, std::move(done)});
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.cb.send = &UcxTransport::on_tag_send_done;
  param.user_data = op.get();
  param.memory_type = ucs_type(data.kind);
  ucs_status_ptr_t request = ucp_tag_send_nbx(endpoint(rank), data.data, data.bytes, tag, &param);
  if (request == nullptr) return op->done(UCS_OK, data.bytes);  // completed in place
  if (UCS_PTR_IS_ERR(request)) return op->done(UCS_PTR_STATUS(request), 0);
  ++pending_sends_;
  op.release();  // on_tag_send_done owns it now
}

void UcxTransport::on_tag_send_done(void* request, ucs_status_t status, void* user_data) {
  guarded("while completing a UCX operation", [&] {
    std::unique_ptr<TagOp> op(static_cast<TagOp*>(user_data));
    --op->transport->pending_sends_;
    ucp_request_free(request);
    if (status != UCS_OK && op->transport->shutting_down_) return;
    op->done(status, 0);
  });
}

void* UcxTransport::tag_recv(std::uint64_t tag, const Segment& into, TagDone done) {
  auto op = std::make_unique<TagOp>(TagOp{this, std::move(done), true});
  ucp_request_param_t param{};
  // Always through the callback, so completion has one path. (A message that is
  // already here completes the receive, callback included, before the call returns.)
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &UcxTransport::on_tag_recv_done;
  param.user_data = op.get();
  param.memory_type = ucs_type(into.kind);
  TagOp* posted = op.release();  // on_tag_recv_done owns it now
  ucs_status_ptr_t request = KODO_UCX_CHECK(ucp_tag_recv_nbx(worker_, into.data, into.bytes, tag,
                                                             ~std::uint64_t{0}, &param));
  if (completed_while_posting_) {  // `posted` is gone
    completed_while_posting_ = false;
    return nullptr;
  }
  posted->posting = false;
  posted_recvs_.insert(request);
  return request;
}

void UcxTransport::on_tag_recv_done(void* request, ucs_status_t status,
                                    const ucp_tag_recv_info_t* info, void* user_data) {
  guarded("while completing a UCX operation", [&] {
    std::unique_ptr<TagOp> op(static_cast<TagOp*>(user_data));
    if (op->posting)
      op->transport->completed_while_posting_ = true;
    else
      op->transport->posted_recvs_.erase(request);
    ucp_request_free(request);
    op->done(status, status == UCS_OK || status == UCS_ERR_MESSAGE_TRUNCATED ? info->length : 0);
  });
}

void UcxTransport::cancel(void* handle) {
  if (posted_recvs_.count(handle)) ucp_request_cancel(worker_, handle);
}

void UcxTransport::on_recv_done(void* request, ucs_status_t status, size_t /*length*/,
                                void* user_data) {
  guarded("while completing a UCX operation", [&] {
    std::unique_ptr<InFlight> state(static_cast<InFlight*>(user_data));
    ucp_request_free(request);
    if (status != UCS_OK)
      fatal(std::string("receiving a message over UCX failed: ") + ucs_status_string(status));
    state->transport->deliver_(std::move(state->message));
  });
}

std::optional<std::pair<std::uint64_t, std::size_t>> UcxTransport::probe(std::uint64_t tag,
                                                                         std::uint64_t mask) {
  ucp_tag_recv_info_t info{};
  if (!ucp_tag_probe_nb(worker_, tag, mask, 0, &info)) return std::nullopt;
  return std::make_pair(std::uint64_t{info.sender_tag}, std::size_t{info.length});
}

void UcxTransport::report_fault(int rank, const std::string& what) {
  const std::string text = what.substr(0, kMaxFaultReport);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_COPY_HEADER | UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_REPLY;
  ucs_status_ptr_t request = ucp_am_send_nbx(endpoint(rank), kFaultAmId, &rank_, sizeof rank_,
                                             text.data(), text.size(), &param);
  if (UCS_PTR_IS_ERR(request)) return;  // the fault is reported here all the same
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (UCS_PTR_IS_PTR(request) && ucp_request_check_status(request) == UCS_INPROGRESS &&
         std::chrono::steady_clock::now() < until)
    progress();
  if (UCS_PTR_IS_PTR(request)) ucp_request_free(request);
  // The peer aborts the job once it has printed the report; until then, keep going.
  while (std::chrono::steady_clock::now() < until) progress();
}

std::string UcxTransport::fault_report(const void* header, size_t header_length, const void* data,
                                       size_t length, const ucp_am_recv_param_t* param) {
  int source = -1;
  if (header_length == sizeof source) std::memcpy(&source, header, sizeof source);
  std::string text;
  if (source < 0 || source >= size_ || source == rank_ ||
      (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || length > kMaxFaultReport) {
    text = "a malformed fault report arrived";
  } else if (const std::string forged = sender_problem(source, param); !forged.empty()) {
    text = "a fault report arrived whose " + forged;
  } else {
    text.assign(static_cast<const char*>(data), length);
    for (char& c : text)
      if (c < 0x20 || c > 0x7e) c = '?';
  }
  return cat(text, " (found by rank ", source, ", which ended the job)");
}

ucs_status_t UcxTransport::on_fault(void* arg, const void* header, size_t header_length, void* data,
                                    size_t length, const ucp_am_recv_param_t* param) {
  fatal(static_cast<UcxTransport*>(arg)->fault_report(header, header_length, data, length, param));
}

void UcxTransport::on_ep_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  guarded("while reporting a lost peer", [&] {
    const auto* peer = static_cast<const Peer*>(arg);
    if (peer->transport->shutting_down_) return;  // peers close their endpoints at exit
    fatal("lost the connection to rank " + std::to_string(peer->rank) + " (" +
          ucs_status_string(status) + "); did that rank exit or fail?");
  });
}

bool UcxTransport::carries(MemoryKind kind) const { return (memory_types_ >> ucs_type(kind)) & 1u; }

unsigned UcxTransport::progress() { return ucp_worker_progress(worker_); }

// A barrier that keeps UCX moving: a peer may need this rank's progress to finish its
// own sends (rendezvous acknowledgements) before it can reach the barrier.
void UcxTransport::progressing_barrier(bool drop_tagged) {
  MPI_Request request;
  KODO_MPI_CHECK(MPI_Ibarrier(comm_, &request));
  for (int done = 0; !done; KODO_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE))) {
    progress();
    if (drop_tagged) drop_tagged_messages();
  }
}

// At the job's end no link is open: a tagged message arriving now is one nothing will
// take (a peer's junk, or a send of a job that ended with messages unprocessed). Each is
// taken out of UCX as it comes, into one scratch buffer (cut to its size), so a peer that
// keeps sending while this rank waits for the others cannot grow this rank's memory.
void UcxTransport::drop_tagged_messages() {
  while (const auto oldest = probe(0, 0)) {
    drop_tagged(oldest->first, oldest->second);
    ++dropped_at_end_;
  }
}

void UcxTransport::drop_tagged(std::uint64_t tag, std::size_t bytes) {
  constexpr std::size_t kScratch = 64 * 1024;
  if (drop_scratch_.empty()) drop_scratch_.resize(kScratch);
  tag_recv(tag, {drop_scratch_.data(), std::min(bytes, kScratch), MemoryKind::host},
           [](ucs_status_t, std::size_t) {});
}

void UcxTransport::shutdown(bool quiet) {
  // A job that ended with messages unprocessed may hold sends nobody will ever match:
  // waiting for them would never end.
  if (quiet)
    while (pending_sends_ > 0) progress();
  shutting_down_ = true;  // peers closing first are expected from here on
  // Receives posted for messages that never came (a channel's next iteration).
  for (void* request : std::vector<void*>(posted_recvs_.begin(), posted_recvs_.end()))
    ucp_request_cancel(worker_, request);
  while (!posted_recvs_.empty()) progress();
  // No rank closes endpoints while a peer may still be sending to it.
  progressing_barrier(true);
  while (!posted_recvs_.empty()) progress();  // the dropped messages' receives
  if (quiet && dropped_at_end_ > 0)           // (a job that ended unclean may leave its own)
    print_error(cat("kodo: rank ", rank_, " dropped ", dropped_at_end_,
                    " tagged message(s) that arrived on no link at the job's end"));
  if (!quiet) return;  // the worker's destruction takes the endpoints with it
  std::vector<ucs_status_ptr_t> closing;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // A forced close is defined only for endpoints with peer error handling on both
  // sides; others are flushed (nothing is outstanding any more) and closed.
  param.flags = peer_errors_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  for (auto& ep : endpoints_) {
    if (!ep) continue;
    ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
    ep = nullptr;
  }
  for (ucs_status_ptr_t request : closing) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS) progress();
    ucp_request_free(request);
  }
  progressing_barrier();
}

}  // namespace kodo::detail
