#include "block.hpp"

#include <string>

namespace jacobi {

JacobiBlock::JacobiBlock(const kodo::UnitInit<JacobiBlock>& init, const Grid& grid,
                         RankReport* report)
    : WorkUnit(init), grid_(grid), report_(report) {
  const std::int64_t global[3] = {grid.x, grid.y, grid.z};
  const std::int64_t units[3] = {init.shape.x, init.shape.y, init.shape.z};
  const std::int64_t idx[3] = {init.index.x, init.index.y, init.index.z};
  for (int d = 0; d < 3; ++d) {
    const auto r = kodo::block_range(global[d], units[d], idx[d]);
    origin_[d] = r.begin;
    shape_.n[d] = r.size;
    has_neighbour_[2 * d] = idx[d] > 0;
    has_neighbour_[2 * d + 1] = idx[d] + 1 < units[d];
  }
  for (bool b : has_neighbour_) neighbours_ += b;
  for (auto& f : field_) {
    f = Field(Kokkos::view_alloc(Kokkos::WithoutInitializing, "jacobi::field"), shape_.padded_size());
    init_field(f, shape_, grid_, origin_);
  }
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f]) send_buffer_[f] = Field("jacobi::face", shape_.face_size(f));
  Space().fence();
}

void JacobiBlock::iterate(std::int64_t count) {
  target_ += count;
  advance();
}

void JacobiBlock::advance() {
  while (iteration_ < target_) {
    if (faces_sent_for_ < iteration_) send_faces();
    auto& got = received_[iteration_ % 2];
    if (got < neighbours_) return;  // wait for the missing faces
    got = 0;
    update(field_[iteration_ % 2], field_[(iteration_ + 1) % 2], shape_);
    ++iteration_;
  }
  if (checksum_requested_) contribute_checksum();
}

void JacobiBlock::send_faces() {
  for (int f = 0; f < 6; ++f)
    if (has_neighbour_[f]) pack_face(field_[iteration_ % 2], shape_, f, send_buffer_[f]);
  // The message takes a copy of each face when it is sent, so packing must be done.
  Space().fence();
  for (int f = 0; f < 6; ++f) {
    if (!has_neighbour_[f]) continue;
    kodo::Index3 n = index();
    (f / 2 == 0 ? n.x : f / 2 == 1 ? n.y : n.z) += f % 2 == 0 ? -1 : 1;
    // Our face f is the neighbour's opposite face.
    unit(n).send<&JacobiBlock::receive_face>(iteration_, f ^ 1, send_buffer_[f]);
  }
  faces_sent_for_ = iteration_;
}

void JacobiBlock::receive_face(std::int64_t iteration, int face, Field data) {
  if (iteration != iteration_ && iteration != iteration_ + 1)
    throw kodo::Error("jacobi3d: a face for iteration " + std::to_string(iteration) +
                      " reached a block at iteration " + std::to_string(iteration_));
  if (face < 0 || face >= 6 || !has_neighbour_[face] ||
      static_cast<std::int64_t>(data.extent(0)) != shape_.face_size(face))
    throw kodo::Error("jacobi3d: a block received a face that does not fit it");
  unpack_face(field_[iteration % 2], shape_, face, data);
  ++received_[iteration % 2];
  if (iteration == iteration_) advance();
}

void JacobiBlock::compute_checksum() {
  checksum_requested_ = true;
  advance();
}

void JacobiBlock::contribute_checksum() {
  checksum_requested_ = false;
  contribute<&JacobiBlock::checksum_done>(checksum(field_[iteration_ % 2], shape_, grid_, origin_),
                                          kodo::Sum{});
}

void JacobiBlock::checksum_done(std::uint64_t checksum) {
  report_->checksum = checksum;
  report_->have_checksum = true;
}

}  // namespace jacobi
