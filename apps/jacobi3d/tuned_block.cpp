// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The tuned regimes of a Jacobi3D block, apart from its plain code (block.cpp): members of
// JacobiBlock that the plain unit and task paths never call.
//
// The rank program (BlockConfig::rank_program): a block only plans an iteration of each
// parity (plan_step): it reads the faces of n from its receive buffers, runs step()
// (unpacks, the update n and the packs of n + 1, as --fusion says) and sends the faces of
// n + 1 from its send buffers; kodo runs the iterations of all of a rank's blocks as one
// device graph per iteration, and the main program counts them (ran).
// The unit path with each kernel launched on the block's streams (advance_on_streams):
// where fusion A-C, graphs, device waits and host completion (Completion::sync) run, and
// --batches none. With fusion B all unpacks of an iteration run as one kernel once every
// face is in. With fusion C or graphs a block runs each iteration as one whole step, on
// the compute stream alone, once all its faces are in: unpack, update n, and pack the
// faces of n + 1 (one fused kernel with C; one graph launch with graphs), then send.
// Device waits (BlockConfig::device_waits): once every face of a block comes by the
// same-node route, the host queues whole iterations ahead on the compute stream, each
// behind waits (on the device) for its faces and followed by the releases of their
// buffers, up to kRunAhead iterations past the last faces handed over; the faces'
// hand-overs then only let the host queue more. No host step stands between a face's
// arrival and the work that reads it.
// The few branches for these regimes inside the plain path's functions (the constructor's
// graphs, pack_faces's fused packs, send_faces's fence, on_face's device waits and fusion
// B) stay there.
#include "block.hpp"

#include <algorithm>
#include <cstdint>

namespace jacobi {

// The rank program.

// Iteration n (parity p) reads A[p] and the faces of n, and writes A[1 - p] and the faces of
// n + 1, which the neighbours read in their iteration n + 1. A face leaves across face f
// tagged f and so arrives tagged with the face opposite its receiver's (f ^ 1).
void JacobiBlock::plan_step(kodo::StepPlan& plan) {
  const int p = plan.phase();
  for (int f = 0; f < 6; ++f) {
    if (!has_neighbour_[f]) continue;
    const kodo::Index3 peer = across_face(index(), f);
    plan.receive(receive_buffer_[p][f], peer, f ^ 1);
    plan.send(send_buffer_[1 - p][f], peer, f);
  }
  if (config_.overlap) {
    // The inner box reads no face: it runs while the faces of n travel (or are copied).
    plan.work_without_receives([this, p](const Space& space) {
      update_inner(space, field_[p], field_[1 - p], shape_, receive_buffer_[p],
                   send_buffer_[1 - p]);
    });
    plan.work([this, p](const Space& space) {
      update_boundary(space, field_[p], field_[1 - p], shape_, receive_buffer_[p],
                      send_buffer_[1 - p]);
      extra_work(space, p);
    });
  } else {
    plan.work([this, p](const Space& space) {
      step(space, config_.fusion, field_[p], field_[1 - p], shape_, receive_buffer_[p],
           send_buffer_[1 - p]);
      extra_work(space, p);
    });
  }
  // The faces of iteration 0, from A[0], in the buffers the last parity sends.
  if (p == 1)
    plan.prime([this](const Space& space) {
      jacobi::pack_faces(space, field_[0], shape_, send_buffer_[0]);
    });
}

void JacobiBlock::ran(std::int64_t iterations) {
  iteration_ += iterations;
  step_ += iterations;
  target_ = iteration_;
}

// The unit path, each kernel on the block's streams (advance() without batches).

void JacobiBlock::advance_on_streams() {
  while (iteration_ < target_) {
    const int p = static_cast<int>(iteration_ % 2);
    if (faces_sent_for_ < iteration_) {
      send_faces();
      // With overlap the inner box of n needs no face of n: it runs while they travel,
      // queued after the sends (which wait only for the work queued before them).
      if (config_.overlap)
        update_inner(compute_->space(), field_[p], field_[1 - p], shape_, receive_buffer_[p],
                     send_buffer_[1 - p]);
    }
    const bool on_device = faces_wait_on_device();
    if (on_device) {
      if (iteration_ - least_handed() >= kRunAhead) return;  // hand-overs let it go on
      for (int f = 0; f < 6; ++f)
        if (has_neighbour_[f]) faces_in_[f].wait(*compute_, static_cast<std::uint64_t>(iteration_));
    } else if (received_[p] < neighbours_) {
      return;  // wait for the missing faces
    }
    received_[p] = 0;
    if (faces_read_from_buffers()) {
      // Update n (with overlap, its boundary), and the faces of n + 1 packed on the way.
      if (config_.overlap)
        update_boundary(compute_->space(), field_[p], field_[1 - p], shape_, receive_buffer_[p],
                        send_buffer_[1 - p]);
      else if (config_.graphs)
        step_graph_[p]->submit(compute_->space());
      else
        step(compute_->space(), config_.fusion, field_[p], field_[1 - p], shape_,
             receive_buffer_[p], send_buffer_[1 - p]);
      extra_work(compute_->space(), p);
      faces_packed_for_ = iteration_ + 1;
      // Their buffers take the faces of n + 2 once the step has read them.
      if (on_device)
        for (int f = 0; f < 6; ++f)
          if (has_neighbour_[f])
            faces_in_[f].release(*compute_, static_cast<std::uint64_t>(iteration_));
    } else {
      if (config_.fusion == Fusion::B)
        unpack_faces(comm_->space(), field_[p], shape_, receive_buffer_[p]);
      compute_->wait_for(*comm_);  // the unpacks of this iteration
      update(compute_->space(), field_[p], field_[1 - p], shape_);
      extra_work(compute_->space(), p);
    }
    ++iteration_;
    ++step_;
  }
  // The checksum fences the compute stream: with device waits, only once every face it
  // waits for is in (the neighbours may need this rank's loop until then).
  if (checksum_requested_ && (waits_from_ < 0 || least_handed() >= iteration_))
    contribute_checksum();
}

// Device waits.

bool JacobiBlock::faces_wait_on_device() {
  if (waits_from_ >= 0) return true;
  if (!config_.device_waits || !faces_read_from_buffers() ||
      config_.completion != Completion::engine || neighbours_ == 0)
    return false;
  // Switch only between iterations with no face in hand: faces from iteration_ on are
  // then all handed over after the stream has waited for them.
  if (received_[0] != 0 || received_[1] != 0) return false;
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f] && !faces_in_[f].waits_on_streams()) return false;
  waits_from_ = iteration_;
  for (int f = 0; f < 6; ++f) handed_[f] = iteration_;
  return true;
}

std::int64_t JacobiBlock::least_handed() const {
  std::int64_t least = iteration_;
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f]) least = std::min(least, handed_[f]);
  return least;
}

}  // namespace jacobi
