// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// One cuboid block of the Jacobi3D grid: a kodo work unit.
//
// A block holds two padded arrays (one ghost layer). At iteration n it reads A[n % 2]
// and writes the interior of A[(n + 1) % 2]. A neighbour is at most one iteration
// ahead (it cannot finish iteration n + 1 without our faces of n + 1), so a face for
// iteration n lands straight in the ghost layer of A[n % 2]: the update never writes
// ghosts, and no face for n + 2 can arrive while A[n % 2] is still being read.
//
// block.cpp holds the plain block (the unit and task paths, with overlap and kernel
// batches); tuned_block.cpp the tuned regimes (the rank program, fusion, graphs, device
// waits, --sync), members of the same class.

#include "tuned_kernels.hpp"

#include <kodo/kodo.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>

namespace jacobi {

// What the blocks' reduction gives the main program after compute_checksum (read with
// blocks.reduced<Summary>()): one round, combined with AddSummaries.
struct Summary {
  std::uint64_t checksum = 0;  // of the field (checksum.hpp's), over every block
  double squares = 0;          // of the last update's changes (0 before any)
  double residual() const { return std::sqrt(squares); }  // the L2 norm of that update
};
struct AddSummaries {
  Summary operator()(const Summary& a, const Summary& b) const {
    return {a.checksum + b.checksum, a.squares + b.squares};
  }
};

// A run's results as the main program prints them (from a Summary, or the baseline's).
struct RankReport {
  std::uint64_t checksum = 0;
  bool have_checksum = false;
  double residual = 0;  // L2 norm of the last update (0 before any)
  bool have_residual = false;
};

// How a block learns that its device work is done.
enum class Completion {
  engine,  // the runtime's completion engine: the rank never waits
  sync,    // fence the stream (the bulk-synchronous way, for comparison)
};

struct BlockConfig {
  Grid grid;
  Completion completion = Completion::engine;
  kodo::CommMode comm = kodo::CommMode::device;  // for neighbours on other ranks
  Fusion fusion = Fusion::none;
  bool graphs = false;   // each iteration's kernels as one graph, replayed
  bool overlap = false;  // update the inner box while the faces travel (fusion none, no graphs)
  // Where faces come by the same-node route, the compute stream waits for them (with
  // fusion C, graphs or overlap, and the completion engine): see JacobiBlock. Only for
  // units that do not share their compute stream (a wait holds all work behind it).
  bool device_waits = false;
  // The rank runs its blocks' iterations as one device program (kodo::StepProgram, see
  // plan_step); otherwise each block runs its own through entry methods and channels.
  bool rank_program = false;
  // Each block runs its iterations as a coroutine (run_iterations): the unit path's
  // iteration written as a loop that awaits its faces (fusion none, engine, no graphs).
  bool task = false;
  // Blocks whose first point lies in the lower half of the grid in x do this many times
  // the work (the update again, into scratch): an imbalance for the balancers.
  std::int64_t imbalance = 1;
  // The task path: a balance point after every this many updates (0: none), where the
  // iterations' task ends and goes on as a new call wherever the block then is.
  std::int64_t balance_every = 0;
  // The balancers weigh the device time of the block's work on its compute stream
  // (measured), not its points times the work factor (stated).
  bool measured_load = false;
  // Kernels launched with other blocks' (the task path; the unit path with fusion none,
  // the completion engine and no graphs or device waits).
  Batches batches = Batches::all;
};

// The unit path: device work of a block runs on two streams of the rank's pool: updates on a
// compute stream, packing and unpacking of faces on a communication stream (greater priority).
// Each neighbour is reached through a kodo::Channel. Each iteration n:
//   pack faces of A[n % 2] (communication stream, after update n-1)
//   -> send each face on its channel (sent once the pack is done: UCX for a neighbour
//      on another rank, GPU-aware or host-staged; a device copy on the same rank)
//   a face of n lands in a receive buffer posted in advance (a receive ring of two
//      buffers per face) -> unpack it into the ghost layer (communication stream) and
//      release the buffer for the face of n + 2
//   -> all faces of n in: update n (compute stream, after the unpacks)
// With batches (BlockConfig::batches, fusion none, the completion engine, no graphs or
// device waits) the unit path's packs, unpacks and update (with overlap, its inner box and
// boundary) go out as kodo::KernelBatch, each launched once for the rank's blocks at the
// end of the scheduler's turn; the block goes on from each launch's callback
// (advance_in_batches).
// With overlap a block splits each update n in two, on the compute stream alone: the
// inner box (update_inner), which needs no face of n and so is launched as soon as
// update n - 1 is, and the boundary (update_boundary, once the faces of n are in), which
// reads the faces from the receive buffers and writes the faces of n + 1 into the send
// buffers; those are sent at once, before the next inner box is launched behind them.
// The faces then travel while the inner box of n + 1 runs.
// The task path (BlockConfig::task) runs the same iteration (fusion none) as a loop in a
// coroutine, run_iterations: pack and send, await each face of n (kodo::AwaitableRing)
// and unpack it, update n; the scheduler resumes it where the callbacks would run. Its
// packs, unpacks and update go out as kodo::KernelBatch, each launched once for the
// rank's blocks (BlockConfig::batches). With overlap, its coroutine sends the faces of n,
// updates the inner box, awaits the faces and updates the boundary (overlapped_iteration).
// Send and receive buffers come in two by parity. A neighbour cannot send its faces of
// n + 2 (or read our send buffer of n again) before it has our faces of n + 1, which
// we send only after our unpacks of n (our step n) have completed on their stream; so
// the buffers of n are free again when n + 2 needs them.
// The tuned regimes (the rank program's plan_step, fusion C and graphs as whole steps,
// device waits, and the unit path's kernels launched one by one, advance_on_streams) are
// described and defined in tuned_block.cpp.
class JacobiBlock : public kodo::WorkUnit<JacobiBlock> {
 public:
  // What checkpoints call this type (kodo/tasking/checkpoints/checkpoint.hpp).
  static constexpr const char* checkpoint_name = "jacobi3d::Block";
  JacobiBlock(const kodo::UnitInit<JacobiBlock>& init, const BlockConfig& config);

  // Entry methods.
  void iterate(std::int64_t count);               // run `count` more iterations (the unit path)
  kodo::Task run_iterations(std::int64_t count);  // the same, as a loop (the task path)
  // Once the iterations asked for so far are done: a Summary to the main program.
  void compute_checksum();

  // The state a checkpoint holds (kodo's unit_state.hpp): the updates done since the
  // computation began, across restarts, and the current array. Restored only before the
  // first iteration, into A[0] (whose ghosts the faces fill; the global boundary's are
  // the same in every checkpoint).
  template <class State>
  void state(State& s) {
    s("step", step_);
    s("field", field_[iteration_ % 2]);
  }
  // Restores this block, before its first iteration, from the checkpoint's blocks at
  // step `step`: its own saved state when the unit grid is the saved one, else the
  // interior points of every saved block that overlaps it (another rank count or ODF).
  // Throws jacobi::Error where the saved blocks are not of that step or that grid, and
  // kodo::Error where kodo cannot read them.
  void restore(const kodo::SavedCollection& saved, std::int64_t step);

  // The tuned regimes (tuned_block.cpp). The rank program: an iteration of parity
  // plan.phase() (kodo::StepProgram), and the iterations it ran, told by the main program
  // once they are done.
  void plan_step(kodo::StepPlan& plan);
  void ran(std::int64_t iterations);
  // Whether the block's stream awaits its faces on the device (--waits device).
  bool waits_on_device() const { return waits_from_ >= 0; }

 private:
  void advance();
  // The unit path with batches: advance's loop, going on from each launch's callback.
  bool in_batches() const;
  void advance_in_batches();
  void launch_packs();
  void launch_updates(bool completes);
  void unpack_in_batch(std::int64_t n, int f);
  void unpacks_launched();
  kodo::Task iteration();             // the task path's iteration_
  kodo::Task overlapped_iteration();  // ... with overlap
  void send_faces();
  void pack_faces(std::int64_t n);
  bool whole_steps() const { return config_.fusion == Fusion::C || config_.graphs; }
  // Whether the kernels read received faces from the receive buffers (no unpacks).
  bool faces_read_from_buffers() const { return whole_steps() || config_.overlap; }
  void on_face(std::int64_t iteration, int face);
  void contribute_checksum();
  // The update of parity p again, into scratch, work_factor_ - 1 times (--imbalance).
  void extra_work(const Space& space, int p);

  // The tuned regimes (tuned_block.cpp): advance() without batches, each kernel launched
  // on the block's streams.
  void advance_on_streams();
  // Whether iteration_ may wait for its faces on the compute stream (and does, from
  // waits_from_ on).
  bool faces_wait_on_device();
  std::int64_t least_handed() const;  // faces handed over on every face, in iterations
  static constexpr std::int64_t kRunAhead = 3;

  BlockConfig config_;
  BlockShape shape_;
  std::int64_t origin_[3];  // global coordinates of the first interior point
  kodo::Stream* compute_;
  kodo::Stream* comm_;
  kodo::Stream* pack_stream_;  // where faces are packed and channels send from
  Field field_[2];
  Field send_buffer_[2][6];  // by parity of the iteration
  Field receive_buffer_[2][6];
  kodo::Channel channel_[6];                     // to the neighbour across each face
  kodo::ReceiveRing<Field> faces_in_[6];         // ... and its faces, two buffers by parity
  kodo::AwaitableRing<Field> faces_awaited_[6];  // the same, awaited (the task path)
  std::optional<StepGraph> step_graph_[2];       // with graphs: the step from A[p] to A[1 - p]
  std::array<bool, 6> has_neighbour_{};
  int neighbours_ = 0;
  std::int64_t iteration_ = 0;          // the next update to run
  std::int64_t step_ = 0;               // updates done, across restarts
  std::int64_t target_ = 0;             // run updates while iteration_ < target_
  std::int64_t faces_packed_for_ = -1;  // the last iteration whose faces are packed
  std::int64_t faces_sent_for_ = -1;    // ... and sent
  int received_[2] = {0, 0};            // faces in hand for iterations of each parity
  std::int64_t waits_from_ = -1;        // the first iteration whose faces the stream awaits
  std::int64_t handed_[6] = {};         // device waits: faces handed over, per face
  bool checksum_requested_ = false;
  // The unit path's batches (in_batches): each waits for the end of the scheduler's turn.
  std::optional<kodo::KernelBatch> packs_, unpacks_, updates_;
  bool launching_ = false;  // packs or an update of this block wait for their launch
  // Faces whose unpacks are in unpacks_ or launched with it, in arrival order: the last
  // unpacks_waiting_ of them wait for the next launch.
  struct FaceIn {
    std::int64_t iteration;
    int face;
  };
  std::array<FaceIn, 12> unpacking_{};
  int unpacking_count_ = 0, unpacks_waiting_ = 0;
  std::int64_t work_factor_ = 1;  // 1, or --imbalance in the grid's lower half in x
  Field scratch_;                 // where the extra work writes
};

}  // namespace jacobi
