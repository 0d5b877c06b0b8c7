// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The tuned variants of a Jacobi3D block's kernels, apart from the plain set in
// kernels.hpp: face kernels fused (--fusion), an iteration as one graph (--graphs), the
// update split around the faces (--overlap), and the update's alternatives that
// perf/jacobi_kernel_bench compares.

#include "kernels.hpp"

#include <Kokkos_Graph.hpp>

#include <cstdint>
#include <string>

namespace jacobi {

using StepGraph = Kokkos::Experimental::Graph<Space>;

// How the face kernels of a block are shaped, each iteration.
enum class Fusion {
  none,  // a pack kernel per face, an unpack kernel per face as it arrives
  A,     // all packs in one kernel; unpacks as faces arrive
  B,     // all packs in one kernel, and all unpacks in one once every face is in
  C,     // unpack, update and pack in one kernel (fused_update), once every face is in
};
// "none", "A", "B" or "C", and back (std::invalid_argument for any other name).
const char* fusion_name(Fusion fusion);
Fusion parse_fusion(const std::string& name);

// pack_face (unpack_face) for every face whose buffer is allocated, in one kernel.
void pack_faces(const Space& space, const Field& a, const BlockShape& s, const Field (&buffers)[6]);
void unpack_faces(const Space& space, const Field& a, const BlockShape& s, const Field (&data)[6]);
// The march over 16-byte pairs of z points that update uses on GPUs (z extent even).
void update_pairs(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                  std::int64_t chunk = kAutoChunk);
// The march with 8-byte accesses only (what update does on the host and for odd z).
void update_scalar(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                   std::int64_t chunk = kAutoChunk);
// The same update as one flat range over all interior points (the plain Kokkos way,
// kept for comparison in perf/).
void update_flat(const Space& space, const Field& a, const Field& b, const BlockShape& s);
// Fusion C's kernel: the update a -> b that reads the ghost values of every face with a
// buffer in `receive` from that buffer (not from a's ghost layer), and writes b's new
// values on each face with a buffer in `send` to that buffer too (what pack_face would).
void fused_update(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                  const Field (&receive)[6], const Field (&send)[6],
                  std::int64_t chunk = kAutoChunk);
// fused_update split in two, for --overlap: update_inner updates the inner box, every
// point not next to a face with a buffer (in `receive` or `send`), reading no ghost of
// those faces: it may run before they arrive. update_boundary updates the other points,
// as fused_update does. Run both (in either order) and they equal fused_update.
void update_inner(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                  const Field (&receive)[6], const Field (&send)[6],
                  std::int64_t chunk = kAutoChunk);
void update_boundary(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                     const Field (&receive)[6], const Field (&send)[6]);
// The same two as kernels of a batch (kodo::KernelBatch), launched with other blocks'.
void update_inner(kodo::KernelBatch& batch, const Field& a, const Field& b, const BlockShape& s,
                  const Field (&receive)[6], const Field (&send)[6]);
void update_boundary(kodo::KernelBatch& batch, const Field& a, const Field& b, const BlockShape& s,
                     const Field (&receive)[6], const Field (&send)[6]);
// One whole iteration of a block whose faces are all in: the received faces into a's
// ghost layer, the update a -> b, and b's faces into the send buffers, with the kernels
// `fusion` says (C: the one fused_update). Faces without a buffer are skipped.
void step(const Space& space, Fusion fusion, const Field& a, const Field& b, const BlockShape& s,
          const Field (&receive)[6], const Field (&send)[6]);
// The same work as an instantiated graph, to be submitted on a stream for every
// iteration of the same parity: one launch instead of one per kernel.
StepGraph step_graph(Fusion fusion, const Field& a, const Field& b, const BlockShape& s,
                     const Field (&receive)[6], const Field (&send)[6]);

}  // namespace jacobi
