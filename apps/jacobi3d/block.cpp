// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A Jacobi3D block's plain code, as a user porting an MPI code writes it (docs/porting.md):
// the unit path (entry methods and channels, kernels batched with the rank's other blocks'),
// the task path (a coroutine that awaits its faces), both with or without overlap, the
// checksum and the restore from a checkpoint. The tuned regimes (the rank program's
// plan_step, fusion A-C, graphs, device waits, --sync, and the unit path's kernels launched
// one by one) are in tuned_block.cpp.
#include "block.hpp"

#include "error.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace jacobi {
namespace {
// A face fills its receive buffer exactly.
void check_whole(const kodo::Arrival<Field>& face) {
  if (face.count != face.view.size())
    throw Error("jacobi3d: a face of " + std::to_string(face.count) + " values arrived where " +
                std::to_string(face.view.size()) + " were expected");
}
}  // namespace

JacobiBlock::JacobiBlock(const kodo::UnitInit<JacobiBlock>& init, const BlockConfig& config)
    : WorkUnit(init), config_(config) {
  if (config.overlap && (config.fusion != Fusion::none || config.graphs))
    throw std::invalid_argument(
        "jacobi3d: overlap has its own kernels: it takes fusion none and no graphs");
  if (config.task && (config.fusion != Fusion::none || config.graphs || config.device_waits ||
                      config.completion != Completion::engine || config.rank_program))
    throw std::invalid_argument(
        "jacobi3d: the task path runs fusion none with the completion engine, without "
        "graphs or device waits");
  const BlockPlace place = place_block(config.grid, init.shape, init.index);
  shape_ = place.shape;
  for (int d = 0; d < 3; ++d) origin_[d] = place.origin[d];
  for (int f = 0; f < 6; ++f) {
    has_neighbour_[f] = place.has_neighbour[f];
    neighbours_ += has_neighbour_[f];
  }
  if (2 * origin_[0] < config.grid.x && config.imbalance > 1) {
    work_factor_ = config.imbalance;
    scratch_ = Field(Kokkos::view_alloc(Kokkos::WithoutInitializing, "jacobi::scratch"),
                     shape_.padded_size());
  }
  // Units share the rank's stream pool round-robin.
  auto& streams = this->streams();
  const auto slot = static_cast<std::size_t>(local_slot());
  compute_ = &streams.compute(slot);
  // The balancers' load: the block's points, times its work factor; or measured.
  if (config.measured_load)
    measure_device_load(*compute_);
  else
    set_load(static_cast<double>(shape_.interior_size() * work_factor_));
  comm_ = &streams.communication(slot);
  // The task path sends from the communication stream: its overlap then runs the inner box
  // of n + 1 beside the copies of the faces of n + 1, not behind them.
  pack_stream_ = faces_read_from_buffers() && !config_.task ? compute_ : comm_;
  if (in_batches()) {
    packs_.emplace(*pack_stream_);
    unpacks_.emplace(*comm_);
    updates_.emplace(*compute_);
  }
  for (auto& f : field_) {
    f = Field(Kokkos::view_alloc(Kokkos::WithoutInitializing, "jacobi::field"),
              shape_.padded_size());
    init_field(f, shape_, config_.grid, origin_);
  }
  for (int f = 0; f < 6; ++f) {
    if (!has_neighbour_[f]) continue;
    for (int parity = 0; parity < 2; ++parity) {
      send_buffer_[parity][f] = Field("jacobi::face", shape_.face_size(f));
      receive_buffer_[parity][f] = Field("jacobi::ghost", shape_.face_size(f));
    }
    if (config_.rank_program) continue;  // the program moves the faces
    channel_[f] = open_channel(*pack_stream_, across_face(index(), f), config.comm);
    if (config_.task) {
      faces_awaited_[f] =
          kodo::AwaitableRing<Field>(channel_[f],
                                     std::vector{receive_buffer_[0][f], receive_buffer_[1][f]});
      continue;
    }
    // Transfer n on the link is the face of iteration n; it lands in the buffer of its
    // parity, and the ring hands faces over in iteration order.
    faces_in_[f] = channel_[f].open_ring(std::vector{receive_buffer_[0][f], receive_buffer_[1][f]},
                                         [this, f](const kodo::Arrival<Field>& a) {
                                           check_whole(a);
                                           on_face(static_cast<std::int64_t>(a.transfer), f);
                                         });
  }
  if (config_.graphs && !config_.rank_program)
    for (int p = 0; p < 2; ++p)
      step_graph_[p] = step_graph(config_.fusion, field_[p], field_[1 - p], shape_,
                                  receive_buffer_[p], send_buffer_[1 - p]);
  Kokkos::fence("jacobi::JacobiBlock");
}

void JacobiBlock::iterate(std::int64_t count) {
  target_ += count;
  advance();
}

// The unit path goes on as far as its faces let it: with batches, or (the tuned regimes and
// --batches none) each kernel launched on its stream, in tuned_block.cpp.
void JacobiBlock::advance() {
  if (in_batches()) return advance_in_batches();
  advance_on_streams();
}

bool JacobiBlock::in_batches() const {
  return !config_.task && !config_.rank_program && config_.batches != Batches::none &&
         config_.fusion == Fusion::none && !config_.graphs && !config_.device_waits &&
         config_.completion == Completion::engine;
}

// advance() with batches: the packs of n, the unpacks of its faces and update n (with
// overlap: the inner box once the faces of n are sent, the boundary once they are in)
// each go out with the other blocks' at the end of the turn, and what must follow a
// kernel on another stream (the sends, the update, the next packs) waits for its
// launch's callback.
void JacobiBlock::advance_in_batches() {
  while (!launching_ && iteration_ < target_) {
    const int p = static_cast<int>(iteration_ % 2);
    if (faces_sent_for_ < iteration_) {
      if (neighbours_ > 0 && faces_packed_for_ < iteration_) return launch_packs();
      send_faces();
      if (config_.overlap) {
        update_inner(*updates_, field_[p], field_[1 - p], shape_, receive_buffer_[p],
                     send_buffer_[1 - p]);
        return launch_updates(false);
      }
    }
    if (received_[p] < neighbours_) return;  // the missing faces (and their unpacks)
    received_[p] = 0;
    if (config_.overlap) {
      update_boundary(*updates_, field_[p], field_[1 - p], shape_, receive_buffer_[p],
                      send_buffer_[1 - p]);
      faces_packed_for_ = iteration_ + 1;
    } else {
      compute_->wait_for(*comm_);  // the unpacks of this iteration
      if (config_.batches != Batches::all) {
        update(compute_->space(), field_[p], field_[1 - p], shape_);
        extra_work(compute_->space(), p);
        ++iteration_;
        ++step_;
        continue;
      }
      update(*updates_, field_[p], field_[1 - p], shape_);
    }
    for (std::int64_t k = 1; k < work_factor_; ++k) update(*updates_, field_[p], scratch_, shape_);
    return launch_updates(true);
  }
  if (!launching_ && checksum_requested_) contribute_checksum();
}

// The update's batch launched with the other blocks'; then the block goes on, the
// iteration done when `completes` (the whole update, or the boundary after the inner box).
void JacobiBlock::launch_updates(bool completes) {
  launching_ = true;
  launch(*updates_, [this, completes] {
    launching_ = false;
    if (completes) {
      ++iteration_;
      ++step_;
    }
    advance_in_batches();
  });
}

// The faces of iteration_ packed with the other blocks' (after update n - 1), then sent.
void JacobiBlock::launch_packs() {
  const int p = static_cast<int>(iteration_ % 2);
  faces_packed_for_ = iteration_;
  pack_stream_->wait_for(*compute_);
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f]) pack_face(*packs_, field_[p], shape_, f, send_buffer_[p][f]);
  launching_ = true;
  launch(*packs_, [this] {
    launching_ = false;
    advance_in_batches();
  });
}

// Face f of iteration n unpacked with the other blocks' faces of this turn; counted in
// and its buffer released once the unpack is launched (unpacks_launched).
void JacobiBlock::unpack_in_batch(std::int64_t n, int f) {
  // An empty batch waits for no launch: what it held went out.
  if (unpacks_->empty()) unpacks_waiting_ = 0;
  unpack_face(*unpacks_, field_[n % 2], shape_, f, receive_buffer_[n % 2][f]);
  unpacking_.at(static_cast<std::size_t>(unpacking_count_++)) = {n, f};
  if (++unpacks_waiting_ == 1) launch(*unpacks_, [this] { unpacks_launched(); });
}

void JacobiBlock::unpacks_launched() {
  const int launched = unpacking_count_ - (unpacks_->empty() ? 0 : unpacks_waiting_);
  for (int i = 0; i < launched; ++i) {
    const auto [n, f] = unpacking_[static_cast<std::size_t>(i)];
    ++received_[n % 2];
    // The buffer may take the face of n + 2 (see on_face).
    faces_in_[f].release(static_cast<std::uint64_t>(n));
  }
  std::copy(unpacking_.begin() + launched, unpacking_.begin() + unpacking_count_,
            unpacking_.begin());
  unpacking_count_ -= launched;
  advance_in_batches();
}

kodo::Task JacobiBlock::run_iterations(std::int64_t count) {
  target_ += count;
  while (iteration_ < target_) {
    if (config_.overlap)
      co_await overlapped_iteration();
    else
      co_await iteration();
    ++iteration_;
    ++step_;
    if (config_.balance_every > 0 && step_ % config_.balance_every == 0 && iteration_ < target_) {
      // The rest travels in the call: rebuilt blocks (all of them, when any moves) start
      // from iteration_ and target_ 0; when none moves, they keep their members.
      const std::int64_t rest = target_ - iteration_;
      target_ = iteration_;
      co_await balance_point<&JacobiBlock::run_iterations>(rest);
    }
  }
}

// Iteration n of the task path: the faces of n packed and sent, each face awaited and
// unpacked, the update.
kodo::Task JacobiBlock::iteration() {
  const std::int64_t n = iteration_;
  const int p = static_cast<int>(n % 2);
  const auto t = static_cast<std::uint64_t>(n);
  const bool batched = config_.batches != Batches::none;
  if (batched && neighbours_ > 0 && faces_packed_for_ < n) {
    // The faces of n, packed with the other blocks' (once update n - 1 is done).
    faces_packed_for_ = n;
    pack_stream_->wait_for(*compute_);
    kodo::KernelBatch packs(*pack_stream_);
    for (int f = 0; f < 6; ++f)
      if (has_neighbour_[f]) pack_face(packs, field_[p], shape_, f, send_buffer_[p][f]);
    co_await launch(packs);
  }
  send_faces();  // packed once update n - 1 is done, sent once packed
  kodo::KernelBatch unpacks(*comm_);
  for (int f = 0; f < 6; ++f) {
    if (!has_neighbour_[f]) continue;
    const kodo::Arrival<Field> face = co_await faces_awaited_[f].transfer(t);
    check_whole(face);
    if (batched) {
      unpack_face(unpacks, field_[p], shape_, f, face.view);
      continue;  // its buffer is released once the unpacks are launched
    }
    unpack_face(comm_->space(), field_[p], shape_, f, face.view);
    // Free for the face of n + 2 at once, as on_face says.
    faces_awaited_[f].release(t);
  }
  if (batched) {
    co_await launch(unpacks);
    for (int f = 0; f < 6; ++f)
      if (has_neighbour_[f]) faces_awaited_[f].release(t);
  }
  compute_->wait_for(*comm_);  // the unpacks
  if (config_.batches == Batches::all) {
    kodo::KernelBatch updates(*compute_);
    update(updates, field_[p], field_[1 - p], shape_);
    co_await launch(updates);
  } else {
    update(compute_->space(), field_[p], field_[1 - p], shape_);
  }
  extra_work(compute_->space(), p);
}

// Iteration n with overlap, as an MPI code overlaps: the faces of n (written by the
// boundary of n - 1) sent, the inner box updated while they travel, the boundary once
// they are in, reading them from the receive buffers and writing the faces of n + 1.
// The sends leave from the communication stream, beside the inner box.
kodo::Task JacobiBlock::overlapped_iteration() {
  const std::int64_t n = iteration_;
  const int p = static_cast<int>(n % 2);
  const auto t = static_cast<std::uint64_t>(n);
  const bool batched = config_.batches != Batches::none;
  pack_stream_->wait_for(*compute_);  // the faces of n, written by the boundary of n - 1
  send_faces();                       // (the first iteration packs them first)
  if (batched) {
    kodo::KernelBatch inner(*compute_);
    update_inner(inner, field_[p], field_[1 - p], shape_, receive_buffer_[p], send_buffer_[1 - p]);
    co_await launch(inner);
  } else {
    update_inner(compute_->space(), field_[p], field_[1 - p], shape_, receive_buffer_[p],
                 send_buffer_[1 - p]);
  }
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f]) check_whole(co_await faces_awaited_[f].transfer(t));
  if (batched) {
    kodo::KernelBatch boundary(*compute_);
    update_boundary(boundary, field_[p], field_[1 - p], shape_, receive_buffer_[p],
                    send_buffer_[1 - p]);
    co_await launch(boundary);
  } else {
    update_boundary(compute_->space(), field_[p], field_[1 - p], shape_, receive_buffer_[p],
                    send_buffer_[1 - p]);
  }
  faces_packed_for_ = n + 1;
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f]) faces_awaited_[f].release(*compute_, t);
  extra_work(compute_->space(), p);
}

void JacobiBlock::extra_work(const Space& space, int p) {
  for (std::int64_t k = 1; k < work_factor_; ++k) update(space, field_[p], scratch_, shape_);
}

// Faces of iteration n are packed from A[n % 2], after the update that produced it.
void JacobiBlock::pack_faces(std::int64_t n) {
  faces_packed_for_ = n;
  if (pack_stream_ != compute_) pack_stream_->wait_for(*compute_);
  if (config_.fusion == Fusion::none) {
    for (int f = 0; f < 6; ++f)
      if (has_neighbour_[f])
        pack_face(pack_stream_->space(), field_[n % 2], shape_, f, send_buffer_[n % 2][f]);
  } else {
    jacobi::pack_faces(pack_stream_->space(), field_[n % 2], shape_, send_buffer_[n % 2]);
  }
}

void JacobiBlock::send_faces() {
  const std::int64_t n = iteration_;
  faces_sent_for_ = n;
  if (neighbours_ == 0) return;
  if (faces_packed_for_ < n) pack_faces(n);
  if (config_.completion == Completion::sync) {
    pack_stream_->space().fence("jacobi::pack (sync)");
    for (int f = 0; f < 6; ++f)
      if (has_neighbour_[f]) channel_[f].send(send_buffer_[n % 2][f], kodo::data_ready);
  } else {
    // Each send leaves once the work enqueued on pack_stream_ (the packs) is done.
    for (int f = 0; f < 6; ++f)
      if (has_neighbour_[f]) channel_[f].send(send_buffer_[n % 2][f]);
  }
}

void JacobiBlock::on_face(std::int64_t n, int f) {
  if (waits_from_ >= 0 && n >= waits_from_) {
    // Awaited on the device (or about to be) and released by the stream already.
    handed_[f] = n + 1;
    advance();
    return;
  }
  if (n != iteration_ && n != iteration_ + 1)
    throw Error("jacobi3d: a face for iteration " + std::to_string(n) +
                " reached a block at iteration " + std::to_string(iteration_));
  if (in_batches() && !faces_read_from_buffers()) return unpack_in_batch(n, f);
  // Our face f is filled from the neighbour's opposite face (with fusion B, all faces
  // of the iteration at once in advance(); in whole steps, by the step).
  if (config_.fusion != Fusion::B && !faces_read_from_buffers())
    unpack_face(comm_->space(), field_[n % 2], shape_, f, receive_buffer_[n % 2][f]);
  ++received_[n % 2];
  // The buffer may take the face of n + 2 at once: the neighbour sends it only after
  // our faces of n + 1, which leave after the work that reads this one (see block.hpp).
  faces_in_[f].release(static_cast<std::uint64_t>(n));
  if (n == iteration_) advance();
}

namespace {
// A saved block, read on the host to be cut into the blocks of another unit grid.
struct SavedBlock {
  std::int64_t step = 0;
  Kokkos::View<double*, Kokkos::HostSpace> field;
  template <class State>
  void state(State& s) {
    s("step", step);
    s("field", field);
  }
};
}  // namespace

void JacobiBlock::restore(const kodo::SavedCollection& saved, std::int64_t step) {
  if (iteration_ != 0) throw Error("jacobi3d: a block is restored before its first iteration");
  auto wrong_step = [&](std::int64_t found, const kodo::Index3& block) {
    return Error("jacobi3d: saved block " + std::to_string(block.x) + "," +
                 std::to_string(block.y) + "," + std::to_string(block.z) + " is at step " +
                 std::to_string(found) + ", the checkpoint at step " + std::to_string(step));
  };
  if (saved.shape() == collection().shape()) {
    saved.read(index(), *this);  // into A[0], in place
    if (step_ != step) throw wrong_step(step_, index());
    return;
  }
  // Interior points of every saved block that overlaps this one; ghosts stay as built.
  auto mine = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, field_[0]);
  const kodo::Extent3 old = saved.shape();
  for (std::int64_t l = 0; l < old.size(); ++l) {
    const kodo::Index3 at = old.delinear(l);
    const BlockPlace p = place_block(config_.grid, old, at);
    std::int64_t lo[3], hi[3];
    bool overlaps = true;
    for (int d = 0; d < 3; ++d) {
      lo[d] = std::max(origin_[d], p.origin[d]);
      hi[d] = std::min(origin_[d] + shape_.n[d], p.origin[d] + p.shape.n[d]);
      overlaps = overlaps && lo[d] < hi[d];
    }
    if (!overlaps) continue;
    SavedBlock b;
    saved.read(at, b);
    if (b.step != step) throw wrong_step(b.step, at);
    if (static_cast<std::int64_t>(b.field.size()) != p.shape.padded_size())
      throw Error("jacobi3d: a saved block holds " + std::to_string(b.field.size()) +
                  " points where its place in the grid has " +
                  std::to_string(p.shape.padded_size()));
    for (std::int64_t x = lo[0]; x < hi[0]; ++x)
      for (std::int64_t y = lo[1]; y < hi[1]; ++y)
        for (std::int64_t z = lo[2]; z < hi[2]; ++z)
          mine(shape_.at(x - origin_[0] + 1, y - origin_[1] + 1, z - origin_[2] + 1)) =
              b.field(p.shape.at(x - p.origin[0] + 1, y - p.origin[1] + 1, z - p.origin[2] + 1));
  }
  Kokkos::deep_copy(field_[0], mine);
  step_ = step;
}

void JacobiBlock::compute_checksum() {
  checksum_requested_ = true;
  advance();
}

void JacobiBlock::contribute_checksum() {
  checksum_requested_ = false;
  const std::uint64_t sum =
      checksum(compute_->space(), field_[iteration_ % 2], shape_, config_.grid, origin_);
  // The last update's size: A[n] against A[n - 1] (0 before the first update).
  const double squares = iteration_ == 0
                             ? 0.0
                             : difference_squares(compute_->space(), field_[iteration_ % 2],
                                                  field_[(iteration_ + 1) % 2], shape_);
  contribute(Summary{sum, squares}, AddSummaries{});
}

}  // namespace jacobi
