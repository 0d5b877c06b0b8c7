// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Migration's views through UCX (ucx_view_route.hpp).
#include <kodo/tasking/migration/detail/ucx_view_route.hpp>

#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/comm/detail/channel_impl.hpp>
#include <kodo/comm/detail/transport_staging.hpp>
#include <kodo/comm/detail/ucx_transport.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_set>

namespace kodo::detail {
namespace {

// Pieces of at most KODO_MIGRATION_PIECE_BYTES, at most this many in flight each way per
// rank (transport_staging.hpp holds their slots; the same-node route has its own,
// node_view_route.cpp).
constexpr std::size_t kStagingSlots = 4;

// A unit's views travel as UCX tagged messages, device to device where they are on the
// device. UCX matches a tag from any rank, so tag bits 63..32 are a number the receiving
// rank drew for the unit among those none of its channel links has and told its sender
// alone (migration.cpp: a third rank cannot aim a message at a moving view but by
// guessing, one in 2^32); bits 31..8 the unit's linear index, bits 7..0 the view's place
// in its state().
std::uint64_t view_tag(const ViewPiece& p) {
  return std::uint64_t{p.tag_number} << 32 | static_cast<std::uint64_t>(p.linear) << 8 | p.view;
}

// The pieces through UCX, copied through a few slots of this rank's kept staging memory
// each way (transport_staging.hpp: a peer's UCX may keep memory it reached mapped, so it
// must never be memory that is freed afterwards; device memory where UCX moves it, else
// pinned host memory: host-staged). Every rank serves its
// pieces in one order, the same on all ranks (unit, view, piece), filling each free slot
// with its first piece not yet served: the first piece not done anywhere is then in flight
// on both of its ranks, so the exchange cannot stall. The pieces of one view share its
// tag: UCX matches one sender's messages of a tag in order.
class UcxViewExchange {
 public:
  UcxViewExchange(Runtime& rt, MPI_Comm comm, const std::vector<ViewPiece>& out,
                  const std::vector<ViewPiece>& in, std::string& problem, PieceWaits& waits)
      : rt_(rt),
        waits_(waits),
        waiting_(waits.watchdog, {}),
        comm_(comm),
        problem_(problem),
        rank_(rt.rank()),
        transport_(RuntimeAccess::channel_host(rt).transport()),
        registry_(RuntimeAccess::channel_host(rt).channels()),
        slot_kind_(transport_.carries(memory_kind<ExecutionSpace::memory_space>())
                       ? memory_kind<ExecutionSpace::memory_space>()
                       : MemoryKind::host),
        space_(rt.streams().communication(0).space()) {
    for (const ViewPiece& p : out) outgoing_.push_back(Piece{p});
    for (const ViewPiece& p : in) {
      incoming_.push_back(Piece{p});
      arriving_numbers_.insert(p.tag_number);
    }
  }

  // Slots for the largest piece each, as many as there are pieces up to kStagingSlots
  // each way; every rank agrees on a failure to find the memory.
  void take_slots() {
    std::uint64_t slot_bytes = 0;
    for (const auto* list : {&outgoing_, &incoming_})
      for (const Piece& p : *list) slot_bytes = std::max<std::uint64_t>(slot_bytes, p.data.bytes);
    const std::size_t sends = std::min<std::size_t>(kStagingSlots, outgoing_.size());
    const std::size_t receives = std::min<std::size_t>(kStagingSlots, incoming_.size());
    std::byte* staging = nullptr;
    try {
      if (sends + receives > 0)
        staging = RuntimeAccess::channel_host(rt_).transport_staging().at_least(
            static_cast<std::size_t>(slot_bytes * (sends + receives)),
            slot_kind_ == MemoryKind::host);
    } catch (...) {
      problem_ = what_of_current();
    }
    agree_and_report(rt_.comm(), problem_);
    for (std::size_t s = 0; s < sends + receives; ++s)
      (s < sends ? send_slots_ : receive_slots_).push_back(Slot{staging + s * slot_bytes});
  }

  // Until every piece is done each way: receives posted into free slots, pieces copied
  // into free send slots and sent, arrived pieces copied out, a sender's notice heeded.
  void run() {
    while (done_out_ < outgoing_.size() || done_in_ < incoming_.size() || stand_ins_ > 0) {
      post_receives();
      send_pieces();
      transport_.progress();
      drop_strays();
      copy_out_arrived();
      heed_stop_notice();
      if (const std::size_t moved = done_in_ + done_out_; moved != moved_) {
        moved_ = moved;
        waiting_.update(waited_for());
      }
    }
    waiting_.update({});  // for the other ranks, unnamed
  }

  // The notices sent, and every rank done: peers may still need this rank's progress to
  // finish theirs.
  void finish() {
    KODO_MPI_CHECK(MPI_Waitall(static_cast<int>(notices_.size()), notices_.data(),
                               MPI_STATUSES_IGNORE));
    MPI_Request all;
    KODO_MPI_CHECK(MPI_Ibarrier(rt_.comm(), &all));
    for (int over = 0; !over; KODO_MPI_CHECK(MPI_Test(&all, &over, MPI_STATUS_IGNORE))) {
      transport_.progress();
      drop_strays();
    }
    drop_strays(true);  // what came since the last look
  }

  int rank() const { return rank_; }

 private:
  struct Piece : ViewPiece {
    void* posted = nullptr;
    bool skipped = false, done = false;
  };
  struct Slot {
    std::byte* at;
    std::size_t piece = 0;
    bool busy = false, arrived = false;
  };

  // What this rank waits for from a peer: its oldest piece not arrived, else the oldest
  // it sends that its receiver has not taken.
  std::string waited_for() const {
    for (const Piece& p : incoming_)
      if (!p.done && !p.skipped) return cat(waits_.piece(p), " from rank ", p.peer, " (UCX)");
    for (const Slot& slot : send_slots_)
      if (slot.busy)
        return cat("rank ", outgoing_[slot.piece].peer, " to take ",
                   waits_.piece(outgoing_[slot.piece]), " (UCX)");
    return "its own copies of moving units' views";
  }

  // Every kStrayInterval turns (and once as the exchange ends), tagged messages on
  // numbers that neither a channel link nor a unit arriving here has are dropped, as run()
  // does (drop_stray_messages): the ranks may wait here on each other for long. The first
  // one refused is this rank's problem, agreed by every rank after the exchange; it is
  // dropped as well, and so is every one after it (each refused too, past the job's
  // 1,024th), so a peer's junk never piles up in UCX while the exchange goes on. Each call
  // takes only what UCX already holds (nothing here drives UCX): it ends.
  void drop_strays(bool now = false) noexcept {
    if (!now && ++turns_ % kStrayInterval != 0) return;
    // A refusal (kodo::Error) dropped its message: look again. Anything else (memory)
    // may have left the message where it was: the next turn looks.
    for (bool refused = true; refused;) {
      refused = false;
      try {
        drop_stray_messages(registry_, transport_, arriving_numbers_);
      } catch (const Error&) {
        refused = true;
        keep_stray_problem();
      } catch (...) {
        keep_stray_problem();
      }
    }
  }

  // Inside a handler: the exception's text, unless this rank has a problem already.
  void keep_stray_problem() noexcept {
    if (!problem_.empty()) return;
    try {
      problem_ = what_of_current();
    } catch (...) {
      problem_ = "kodo: a tagged message no channel link or migration has was refused";
    }
  }

  void failed(const char* what, ucs_status_t status) noexcept {
    if (!problem_.empty()) return;
    try {
      problem_ = cat(what, " (UCX: ", ucs_status_string(status), ")");
    } catch (...) {
      problem_ = "kodo: a moving unit's view could not be moved";
    }
  }

  // Whether the send was made; `done` runs either way (at once when it was not).
  bool send(int peer, std::uint64_t tag, const Segment& data, UcxTransport::TagDone done) {
    issuing_ = true;
    refused_ = false;
    try {
      transport_.tag_send(peer, tag, data, [this, done](ucs_status_t status, std::size_t n) {
        if (issuing_ && status != UCS_OK) refused_ = true;
        done(status, n);
      });
    } catch (...) {
      refused_ = true;
      done(UCS_ERR_NO_RESOURCE, 0);
    }
    issuing_ = false;
    return !refused_;
  }

  // Each free receive slot takes the next piece not skipped.
  void post_receives() {
    for (Slot& slot : receive_slots_) {
      while (!slot.busy && next_in_ < incoming_.size()) {
        const std::size_t i = next_in_++;
        Piece& p = incoming_[i];
        if (p.skipped) {
          ++done_in_;
          continue;
        }
        slot.busy = true;
        slot.piece = i;
        p.posted = transport_.tag_recv(
            view_tag(p), Segment{slot.at, p.data.bytes, slot_kind_},
            [this, i, s = &slot](ucs_status_t status, std::size_t length) {
              Piece& q = incoming_[i];
              q.posted = nullptr;
              if (status == UCS_OK && length == q.data.bytes) {
                s->arrived = true;
                return;
              }
              failed(status == UCS_OK ? "a piece of a moving unit's view came with another size"
                                      : "a piece of a moving unit's view did not arrive",
                     status);
              q.done = true;
              s->busy = false;
              ++done_in_;
            });
      }
    }
  }

  // Each free send slot takes the next piece for a peer not stopped, copied in; once the
  // copies are done, the slots' pieces are sent.
  void send_pieces() {
    filled_.clear();
    for (Slot& slot : send_slots_) {
      while (next_out_ < outgoing_.size() && stopped_at_.count(outgoing_[next_out_].peer)) {
        ++next_out_;  // a peer this rank sends nothing more to
        ++done_out_;
      }
      if (slot.busy || next_out_ == outgoing_.size()) continue;
      slot.busy = true;
      slot.piece = next_out_++;
      const Piece& p = outgoing_[slot.piece];
      copy_bytes(space_, Segment{slot.at, p.data.bytes, slot_kind_}, p.data, p.data.bytes);
      filled_.push_back(&slot);
    }
    if (!filled_.empty()) space_.fence("kodo::migrate staging out");
    for (Slot* slot : filled_) send_from(*slot);
  }

  // A send that fails as it is made sends an empty message with its tag in its place, so
  // the receiver's next receive of that tag still matches the right piece (it then fails
  // on the length); if that fails too, this rank sends the peer nothing more and tells it
  // from which piece on (an MPI message), and the peer stops waiting for those.
  void send_from(Slot& slot) {
    const Piece& p = outgoing_[slot.piece];
    if (stopped_at_.count(p.peer)) {
      slot.busy = false;
      ++done_out_;
      return;
    }
    const std::uint64_t tag = view_tag(p);
    const bool issued = send(p.peer, tag, Segment{slot.at, p.data.bytes, slot_kind_},
                             [this, s = &slot](ucs_status_t status, std::size_t) {
                               s->busy = false;
                               ++done_out_;
                               if (status != UCS_OK)
                                 failed("a moving unit's view could not be sent", status);
                             });
    if (issued) return;
    ++stand_ins_;
    if (send(p.peer, tag, Segment{nullptr, 0, MemoryKind::host},
             [this](ucs_status_t, std::size_t) { --stand_ins_; }))
      return;
    stopped_at_[p.peer] = p.number;
    notice_numbers_.push_back(p.number);
    notices_.emplace_back();
    KODO_MPI_CHECK(MPI_Isend(&notice_numbers_.back(), 1, MPI_UINT64_T, p.peer, kFailedTag, comm_,
                             &notices_.back()));
  }

  void copy_out_arrived() {
    filled_.clear();
    for (Slot& slot : receive_slots_)
      if (slot.arrived) {
        const Piece& p = incoming_[slot.piece];
        copy_bytes(space_, p.data, Segment{slot.at, p.data.bytes, slot_kind_}, p.data.bytes);
        filled_.push_back(&slot);
      }
    if (!filled_.empty()) space_.fence("kodo::migrate staging in");
    for (Slot* slot : filled_) {
      incoming_[slot->piece].done = true;
      slot->arrived = slot->busy = false;
      ++done_in_;
    }
  }

  // A sender's notice: nothing more comes from it, from that piece on.
  void heed_stop_notice() {
    int notice = 0;
    MPI_Status status;
    KODO_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kFailedTag, comm_, &notice, &status));
    if (!notice) return;
    std::uint64_t from = 0;
    const int sender = status.MPI_SOURCE;
    KODO_MPI_CHECK(MPI_Recv(&from, 1, MPI_UINT64_T, sender, kFailedTag, comm_, MPI_STATUS_IGNORE));
    failed("a rank could not send a moving unit's views", UCS_ERR_CANCELED);
    for (std::size_t i = 0; i < incoming_.size(); ++i) {
      Piece& p = incoming_[i];
      if (p.peer != sender || p.number < from || p.done) continue;
      if (p.posted)
        transport_.cancel(p.posted);  // nothing matched it: its completion runs, cancelled
      else if (i >= next_in_)
        p.skipped = true;
    }
  }

  Runtime& rt_;
  PieceWaits& waits_;
  WatchdogWait waiting_;
  std::size_t moved_ = ~std::size_t{0};  // progress seen
  MPI_Comm comm_;
  std::string& problem_;
  const int rank_;
  UcxTransport& transport_;
  ChannelRegistry& registry_;
  std::unordered_set<std::uint32_t> arriving_numbers_;  // this rank drew them (migration.cpp)
  unsigned turns_ = 0;
  const MemoryKind slot_kind_;
  const ExecutionSpace& space_;
  std::vector<Piece> outgoing_, incoming_;
  std::vector<Slot> send_slots_, receive_slots_;
  std::size_t next_out_ = 0, next_in_ = 0, done_out_ = 0, done_in_ = 0, stand_ins_ = 0;
  std::map<int, std::uint64_t> stopped_at_;  // peers sent nothing more, from that piece on
  std::deque<std::uint64_t> notice_numbers_;
  std::vector<MPI_Request> notices_;
  bool issuing_ = false, refused_ = false;  // a send under way, and whether it failed at once
  std::vector<Slot*> filled_;
};

}  // namespace

void move_views_through_ucx(Runtime& runtime, MPI_Comm comm, const std::vector<ViewPiece>& outgoing,
                            const std::vector<ViewPiece>& incoming, std::string& problem,
                            PieceWaits& waits) {
  UcxViewExchange exchange(runtime, comm, outgoing, incoming, problem, waits);
  exchange.take_slots();
  try {
    exchange.run();
  } catch (...) {
    // Receives posted into this exchange's slots and sends from them are under way: the
    // job cannot go on (a device or MPI failure in the middle of moving the views).
    fatal(cat("moving units' views failed on rank ", exchange.rank(), ": ", what_of_current()));
  }
  exchange.finish();
}

}  // namespace kodo::detail
