// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "baseline.hpp"

#include <array>
#include <cmath>

namespace jacobi {

BaselineResult run_baseline(MPI_Comm comm, const Grid& grid, const kodo::Extent3& blocks,
                            std::int64_t warmup, std::int64_t iterations) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const kodo::Index3 me = blocks.delinear(rank);
  const BlockPlace place = place_block(grid, blocks, me);
  const BlockShape& shape = place.shape;
  const std::int64_t* origin = place.origin;
  std::array<int, 6> neighbour;  // rank across each face, or -1
  for (int f = 0; f < 6; ++f)
    neighbour[f] = place.has_neighbour[f] ? static_cast<int>(blocks.linear(across_face(me, f)))
                                          : -1;
  const Space space;
  Field field[2];
  for (auto& f : field) {
    f = Field(Kokkos::view_alloc(Kokkos::WithoutInitializing, "baseline::field"),
              shape.padded_size());
    init_field(f, shape, grid, origin);
  }
  Field send[6], recv[6];
  Field::host_mirror_type host_send[6], host_recv[6];
  for (int f = 0; f < 6; ++f) {
    if (neighbour[f] < 0) continue;
    send[f] = Field("baseline::send", shape.face_size(f));
    recv[f] = Field("baseline::recv", shape.face_size(f));
    host_send[f] = Kokkos::create_mirror_view(send[f]);
    host_recv[f] = Kokkos::create_mirror_view(recv[f]);
  }
  Kokkos::fence("baseline::init");

  auto step = [&](std::int64_t n) {
    Field& a = field[n % 2];
    for (int f = 0; f < 6; ++f)
      if (neighbour[f] >= 0) pack_face(space, a, shape, f, send[f]);
    space.fence("baseline::pack");
    std::array<MPI_Request, 12> requests;
    int pending = 0;
    for (int f = 0; f < 6; ++f) {
      if (neighbour[f] < 0) continue;
      Kokkos::deep_copy(host_send[f], send[f]);
      const int count = static_cast<int>(host_send[f].size());
      // Our face f arrives at the neighbour as its face f ^ 1: the tag is the sender's face.
      MPI_Irecv(host_recv[f].data(), count, MPI_DOUBLE, neighbour[f], f ^ 1, comm,
                &requests[pending++]);
      MPI_Isend(host_send[f].data(), count, MPI_DOUBLE, neighbour[f], f, comm,
                &requests[pending++]);
    }
    MPI_Waitall(pending, requests.data(), MPI_STATUSES_IGNORE);
    for (int f = 0; f < 6; ++f) {
      if (neighbour[f] < 0) continue;
      Kokkos::deep_copy(recv[f], host_recv[f]);
      unpack_face(space, a, shape, f, recv[f]);
    }
    update(space, a, field[(n + 1) % 2], shape);
    space.fence("baseline::update");
  };

  for (std::int64_t n = 0; n < warmup; ++n) step(n);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  for (std::int64_t n = warmup; n < warmup + iterations; ++n) step(n);
  MPI_Barrier(comm);
  BaselineResult result;
  result.seconds = MPI_Wtime() - t0;

  const std::int64_t done = warmup + iterations;
  std::uint64_t sum = checksum(space, field[done % 2], shape, grid, origin), total = 0;
  double squares =
      done == 0 ? 0.0 : difference_squares(space, field[done % 2], field[(done + 1) % 2], shape);
  double all_squares = 0;
  MPI_Reduce(&sum, &total, 1, MPI_UINT64_T, MPI_SUM, 0, comm);  // unsigned: modulo 2^64
  MPI_Reduce(&squares, &all_squares, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  result.report.checksum = total;
  result.report.have_checksum = true;
  result.report.residual = std::sqrt(all_squares);
  result.report.have_residual = done > 0;
  return result;
}

}  // namespace jacobi
