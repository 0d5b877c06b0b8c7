// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The tuned variants of a Jacobi3D block's kernels (tuned_kernels.hpp).
#include "tuned_kernels.hpp"

#include "march.hpp"

#include <stdexcept>
#include <string>

namespace jacobi {
namespace {

// The faces of one fused kernel: where each starts in the concatenation of all of them.
// Which of six consecutive ranges holds index i: start[j] is range j's first index,
// start[6] the total.
KOKKOS_INLINE_FUNCTION int range_of(const std::int64_t (&start)[7], std::int64_t i) {
  int j = 0;
  while (i >= start[j + 1]) ++j;
  return j;
}

struct FaceSet {
  double* buffer[6];
  std::int64_t start[7];  // start[f]: first index of face f; start[6]: the total
};

FaceSet face_set(const BlockShape& s, const Field (&buffers)[6]) {
  FaceSet set{};
  for (int f = 0; f < 6; ++f) {
    set.buffer[f] = buffers[f].data();
    set.start[f + 1] = set.start[f] + (buffers[f].data() ? s.face_size(f) : 0);
  }
  return set;
}

template <class Launch>
void pack_faces_with(Launch&& launch, const Field& a, const BlockShape& s,
                     const Field (&buffers)[6]) {
  const FaceSet set = face_set(s, buffers);
  launch(
      "jacobi::pack_faces", Range<Policy>{0, set.start[6]}, KOKKOS_LAMBDA(std::int64_t i) {
        const int f = range_of(set.start, i);
        const std::int64_t layer = f % 2 == 0 ? 1 : s.n[f / 2];
        set.buffer[f][i - set.start[f]] = a(s.face_point(f, i - set.start[f], layer));
      });
}

template <class Launch>
void unpack_faces_with(Launch&& launch, const Field& a, const BlockShape& s,
                       const Field (&data)[6]) {
  const FaceSet set = face_set(s, data);
  launch(
      "jacobi::unpack_faces", Range<Policy>{0, set.start[6]}, KOKKOS_LAMBDA(std::int64_t i) {
        const int f = range_of(set.start, i);
        const std::int64_t layer = f % 2 == 0 ? 0 : s.n[f / 2] + 1;
        a(s.face_point(f, i - set.start[f], layer)) = set.buffer[f][i - set.start[f]];
      });
}

// Fusion C: unpack, update and pack as one kernel. The update reads a neighbour's face
// straight from its receive buffer instead of the ghost layer, and writes each new value
// on a face layer to the send buffer too. Each thread marches along x through `chunk`
// points of one (y, z) column, as the scalar update does; a column that touches a face
// takes update_point_with_faces point by point, the others the plain march.
struct StepFaces {
  const double* in[6];  // received faces of this iteration, or null: read the ghost layer
  double* out[6];       // send buffers for the next iteration, or null
};

StepFaces step_faces(const Field (&receive)[6], const Field (&send)[6]) {
  StepFaces faces{};
  for (int f = 0; f < 6; ++f) {
    faces.in[f] = receive[f].data();
    faces.out[f] = send[f].data();
  }
  return faces;
}

// Fusion C's update of one point (padded coordinates x, y, z): the ghost across a face
// with a receive buffer is read from that buffer, and the new value of a point on a face
// with a send buffer is written to that buffer too.
KOKKOS_INLINE_FUNCTION void update_point_with_faces(const double* a, double* b, const BlockShape& s,
                                                    const StepFaces& f, std::int64_t x,
                                                    std::int64_t y, std::int64_t z) {
  const std::int64_t sx = (s.n[1] + 2) * (s.n[2] + 2), sy = s.n[2] + 2, p = s.at(x, y, z);
  const std::int64_t nx = s.n[0], ny = s.n[1], nz = s.n[2];
  // Indices of the point on an x, y and z face.
  const std::int64_t yz = (y - 1) * nz + (z - 1), xz = (x - 1) * nz + (z - 1),
                     xy = (x - 1) * ny + (y - 1);
  const double v = stencil(a[p], x == 1 && f.in[0] ? f.in[0][yz] : a[p - sx],
                           x == nx && f.in[1] ? f.in[1][yz] : a[p + sx],
                           y == 1 && f.in[2] ? f.in[2][xz] : a[p - sy],
                           y == ny && f.in[3] ? f.in[3][xz] : a[p + sy],
                           z == 1 && f.in[4] ? f.in[4][xy] : a[p - 1],
                           z == nz && f.in[5] ? f.in[5][xy] : a[p + 1]);
  b[p] = v;
  if (x == 1 && f.out[0]) f.out[0][yz] = v;
  if (x == nx && f.out[1]) f.out[1][yz] = v;
  if (y == 1 && f.out[2]) f.out[2][xz] = v;
  if (y == ny && f.out[3]) f.out[3][xz] = v;
  if (z == 1 && f.out[4]) f.out[4][xy] = v;
  if (z == nz && f.out[5]) f.out[5][xy] = v;
}

template <class Index, class Launch>
void fused_step(Launch&& launch, const Field& af, const Field& bf, const BlockShape& s,
                const StepFaces& faces, std::int64_t chunk) {
  const double* __restrict__ a = af.data();
  double* __restrict__ b = bf.data();
  const std::int64_t sx = (s.n[1] + 2) * (s.n[2] + 2), sy = s.n[2] + 2;
  const std::int64_t nx = s.n[0], ny = s.n[1], nz = s.n[2];
  const Index inz = static_cast<Index>(nz), iny = static_cast<Index>(ny);
  const std::int64_t chunks = (nx + chunk - 1) / chunk;
  using IndexPolicy = Kokkos::RangePolicy<Space, Kokkos::IndexType<Index>>;
  launch(
      "jacobi::fused_step", Range<IndexPolicy>{0, static_cast<Index>(chunks * ny * nz)},
      KOKKOS_LAMBDA(Index i) {
        const std::int64_t z = i % inz, y = i / inz % iny, c = i / inz / iny;
        const std::int64_t x0 = c * chunk + 1;
        const std::int64_t x1 = x0 + chunk <= nx + 1 ? x0 + chunk : nx + 1;
        // Most columns touch no face: they take the plain march, free of the tests below.
        const bool touches_face = (x0 == 1 && (faces.in[0] || faces.out[0])) ||
                                  (x1 == nx + 1 && (faces.in[1] || faces.out[1])) ||
                                  (y == 0 && (faces.in[2] || faces.out[2])) ||
                                  (y == ny - 1 && (faces.in[3] || faces.out[3])) ||
                                  (z == 0 && (faces.in[4] || faces.out[4])) ||
                                  (z == nz - 1 && (faces.in[5] || faces.out[5]));
        if (touches_face) {
          for (std::int64_t x = x0; x < x1; ++x)
            update_point_with_faces(a, b, s, faces, x, y + 1, z + 1);
          return;
        }
        std::int64_t p = s.at(x0, y + 1, z + 1);
        double xm = a[p - sx], cc = a[p];
        for (std::int64_t x = x0; x < x1; ++x, p += sx) {
          const double xp = a[p + sx];
          b[p] = stencil(cc, xm, xp, a[p - sy], a[p + sy], a[p - 1], a[p + 1]);
          xm = cc;
          cc = xp;
        }
      });
}

// Fusion C on GPUs: the pair march of update_pairs, with the faces. Every thread runs
// the same loop (no divergent path for the columns at a face): where its column touches
// a face, a pointer into that face's buffer is set, and the loop reads the ghost value
// from it, or writes the new value to it, instead of the field. Column index j of a y
// face advances by nz per x step, of a z face by ny. Pair k holds interior z 2k-1 (lo,
// inside when k > 0) and 2k (hi, inside when 2k < nz).
struct PairColumnFaces {
  const double* x_in[2];  // ghost values before the first / after the last x plane, or null
  double* x_out[2];       // the x = 1 / x = nx plane's values, or null
  const double* y_in[2];  // the -y / +y ghost row of this column, at its x = 1 point, or null
  double* y_out[2];
  const double* zm_in;  // pair 0: the -z ghost of its hi point, or null
  double* zm_out;
  const double* zp_in;  // last pair: the +z ghost of its lo point, or null
  double* zp_out;
};

KOKKOS_INLINE_FUNCTION void march_column_faces(const Pair* __restrict__ a, Pair* __restrict__ b,
                                               std::int64_t q, std::int64_t x0, std::int64_t x1,
                                               std::int64_t nx, std::int64_t sxq, std::int64_t syq,
                                               std::int64_t ystep, std::int64_t zstep,
                                               bool lo_inside, bool hi_inside,
                                               const PairColumnFaces& f) {
  const double* a1 = reinterpret_cast<const double*>(a);
  double* b1 = reinterpret_cast<double*>(b);
  const auto face_pair = [&](const double* face, std::int64_t j) {
    return Pair{lo_inside ? face[j] : 0.0, hi_inside ? face[j + 1] : 0.0};
  };
  Pair xm = x0 == 1 && f.x_in[0] ? face_pair(f.x_in[0], 0) : a[q - sxq];
  Pair cc = a[q];
  std::int64_t jy = 0, jz = 0;
  for (std::int64_t x = x0; x < x1; ++x) {
    const Pair xp = x == nx && f.x_in[1] ? face_pair(f.x_in[1], 0) : a[q + sxq];
    const Pair ym = f.y_in[0] ? face_pair(f.y_in[0], jy) : a[q - syq];
    const Pair yp = f.y_in[1] ? face_pair(f.y_in[1], jy) : a[q + syq];
    const double zl = a1[2 * q - 1], zr = a1[2 * q + 2];
    const double lo_zp = f.zp_in ? f.zp_in[jz] : cc.hi;
    const double hi_zm = f.zm_in ? f.zm_in[jz] : cc.lo;
    Pair out;
    out.lo = stencil(cc.lo, xm.lo, xp.lo, ym.lo, yp.lo, zl, lo_zp);
    out.hi = stencil(cc.hi, xm.hi, xp.hi, ym.hi, yp.hi, hi_zm, zr);
    if (lo_inside && hi_inside) {
      b[q] = out;
    } else {
      if (lo_inside) b1[2 * q] = out.lo;
      if (hi_inside) b1[2 * q + 1] = out.hi;
    }
    const auto store = [&](double* face, std::int64_t j) {
      if (lo_inside) face[j] = out.lo;
      if (hi_inside) face[j + 1] = out.hi;
    };
    if (x == 1 && f.x_out[0]) store(f.x_out[0], 0);
    if (x == nx && f.x_out[1]) store(f.x_out[1], 0);
    if (f.y_out[0]) store(f.y_out[0], jy);
    if (f.y_out[1]) store(f.y_out[1], jy);
    if (f.zm_out) f.zm_out[jz] = out.hi;
    if (f.zp_out) f.zp_out[jz] = out.lo;
    xm = cc;
    cc = xp;
    q += sxq;
    jy += ystep;
    jz += zstep;
  }
}

template <class Launch>
void fused_pairs(Launch&& launch, const Field& af, const Field& bf, const BlockShape& s,
                 const StepFaces& faces, std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const std::int64_t sxq = (s.n[1] + 2) * (s.n[2] + 2) / 2, syq = (s.n[2] + 2) / 2;
  const std::int64_t nx = s.n[0], ny = s.n[1], nz = s.n[2];
  // Fusion C's kernel needs 80 registers; capping it below spills and slows it
  // (perf/results/jacobi_kernel_min_blocks_h200x2.csv).
  for_each_pair_column<1>(
      launch, "jacobi::fused_pairs", interior(s), chunk,
      KOKKOS_LAMBDA(std::int64_t k, std::int64_t y, std::int64_t x0, std::int64_t x1) {
        // Interior z of this pair's lo point (hi is lo + 1); -1 for pair 0.
        const std::int64_t z = 2 * k - 1, xz = (x0 - 1) * nz + z, xy = (x0 - 1) * ny + y;
        PairColumnFaces f{};
        f.x_in[0] = faces.in[0] ? faces.in[0] + y * nz + z : nullptr;
        f.x_in[1] = faces.in[1] ? faces.in[1] + y * nz + z : nullptr;
        f.x_out[0] = faces.out[0] ? faces.out[0] + y * nz + z : nullptr;
        f.x_out[1] = faces.out[1] ? faces.out[1] + y * nz + z : nullptr;
        f.y_in[0] = y == 0 && faces.in[2] ? faces.in[2] + xz : nullptr;
        f.y_in[1] = y == ny - 1 && faces.in[3] ? faces.in[3] + xz : nullptr;
        f.y_out[0] = y == 0 && faces.out[2] ? faces.out[2] + xz : nullptr;
        f.y_out[1] = y == ny - 1 && faces.out[3] ? faces.out[3] + xz : nullptr;
        f.zm_in = k == 0 && faces.in[4] ? faces.in[4] + xy : nullptr;
        f.zm_out = k == 0 && faces.out[4] ? faces.out[4] + xy : nullptr;
        f.zp_in = 2 * k == nz && faces.in[5] ? faces.in[5] + xy : nullptr;
        f.zp_out = 2 * k == nz && faces.out[5] ? faces.out[5] + xy : nullptr;
        march_column_faces(a, b, x0 * sxq + (y + 1) * syq + k, x0, x1, nx, sxq, syq, nz, ny, k > 0,
                           2 * k + 1 <= nz, f);
      });
}

template <class Launch>
void fused_step(Launch&& launch, const Field& a, const Field& b, const BlockShape& s,
                const Field (&receive)[6], const Field (&send)[6], std::int64_t chunk) {
  const StepFaces faces = step_faces(receive, send);
  // A block without neighbours has no face to read or write: the plain update is faster.
  bool any_face = false;
  for (int f = 0; f < 6; ++f) any_face = any_face || faces.in[f] || faces.out[f];
  if (!any_face) return update_with(launch, a, b, s, interior(s), chunk);
  if constexpr (!kodo::host_build)
    if (s.n[2] % 2 == 0) return fused_pairs(launch, a, b, s, faces, chunk);
  chunk = choose_chunk(chunk, s.n[1] * s.n[2], s.n[0]);
  const std::int64_t threads = (s.n[0] + chunk - 1) / chunk * s.n[1] * s.n[2];
  if (threads <= std::numeric_limits<std::uint32_t>::max())
    fused_step<std::uint32_t>(launch, a, b, s, faces, chunk);
  else
    fused_step<std::int64_t>(launch, a, b, s, faces, chunk);
}

// --overlap splits a block's update in two. The points next to a face with a buffer
// (a neighbour's face comes in, or ours goes out) are the boundary; the rest is the
// inner box, whose update reads no received ghost and writes no face, so it can run
// while the faces of its iteration travel.
Box inner_box(const BlockShape& s, const StepFaces& faces) {
  Box box = interior(s);
  for (int d = 0; d < 3; ++d) {
    if (faces.in[2 * d] || faces.out[2 * d]) box.lo[d] = std::min(box.lo[d] + 1, box.hi[d]);
    if (faces.in[2 * d + 1] || faces.out[2 * d + 1]) box.hi[d] = std::max(box.hi[d] - 1, box.lo[d]);
  }
  return box;
}

// The boundary as six disjoint slabs: slab 2d + side lies below (side 0) or above the
// inner box along dimension d, within the inner box's range along the dimensions
// before d and across the whole interior along those after. A point outside the inner
// box falls in the slab of the first dimension along which it is outside. `inner` is
// the inner box as lo[3] then hi[3]: the kernel's functor keeps that, not the six slabs,
// and so stays within the 512 bytes Kokkos passes as kernel arguments (a larger functor
// goes through constant memory, which a recorded step program cannot replay).
KOKKOS_INLINE_FUNCTION void slab_of(const BlockShape& s, const std::int64_t (&inner)[6], int j,
                                    std::int64_t (&lo)[3], std::int64_t (&hi)[3]) {
  const int d = j / 2;
  for (int e = 0; e < 3; ++e) {
    lo[e] = e < d ? inner[e] : 1;
    hi[e] = e < d ? inner[3 + e] : s.n[e] + 1;
  }
  if (j % 2 == 0)
    hi[d] = inner[d];
  else
    lo[d] = inner[3 + d];
}

// The boundary is a few face layers: one thread per point is enough.
template <class Launch>
void update_boundary_with(Launch&& launch, const Field& af, const Field& bf, const BlockShape& s,
                          const StepFaces& faces) {
  const Box inner_points = inner_box(s, faces);
  std::int64_t inner[6], start[7] = {0};  // start[j]: slab j's first point; start[6]: the total
  for (int d = 0; d < 3; ++d) {
    inner[d] = inner_points.lo[d];
    inner[3 + d] = inner_points.hi[d];
  }
  for (int j = 0; j < 6; ++j) {
    std::int64_t lo[3], hi[3], points = 1;
    slab_of(s, inner, j, lo, hi);
    for (int e = 0; e < 3; ++e) points *= std::max<std::int64_t>(0, hi[e] - lo[e]);
    start[j + 1] = start[j] + points;
  }
  if (start[6] == 0) return;
  const double* a = af.data();
  double* b = bf.data();
  launch(
      "jacobi::update_boundary", Range<Policy>{0, start[6]}, KOKKOS_LAMBDA(std::int64_t i) {
        const int j = range_of(start, i);
        std::int64_t lo[3], hi[3];
        slab_of(s, inner, j, lo, hi);
        const std::int64_t nz = hi[2] - lo[2], ny = hi[1] - lo[1], k = i - start[j];
        update_point_with_faces(a, b, s, faces, lo[0] + k / nz / ny, lo[1] + k / nz % ny,
                                lo[2] + k % nz);
      });
}

// One whole iteration, shaped by `fusion`.
template <class Launch>
void step_with(Launch&& launch, Fusion fusion, const Field& a, const Field& b, const BlockShape& s,
               const Field (&receive)[6], const Field (&send)[6]) {
  if (fusion == Fusion::C) return fused_step(launch, a, b, s, receive, send, kAutoChunk);
  if (fusion == Fusion::B) {
    unpack_faces_with(launch, a, s, receive);
  } else {
    for (int f = 0; f < 6; ++f)
      if (receive[f].data()) unpack_face_with(launch, a, s, f, receive[f]);
  }
  update_with(launch, a, b, s, interior(s), kAutoChunk);
  if (fusion == Fusion::none) {
    for (int f = 0; f < 6; ++f)
      if (send[f].data()) pack_face_with(launch, b, s, f, send[f]);
  } else {
    pack_faces_with(launch, b, s, send);
  }
}

}  // namespace

const char* fusion_name(Fusion fusion) {
  static constexpr const char* names[] = {"none", "A", "B", "C"};
  return names[static_cast<int>(fusion)];
}

Fusion parse_fusion(const std::string& name) {
  for (const Fusion f : {Fusion::none, Fusion::A, Fusion::B, Fusion::C})
    if (name == fusion_name(f)) return f;
  throw std::invalid_argument("unknown fusion '" + name + "'");
}

void pack_faces(const Space& space, const Field& a, const BlockShape& s,
                const Field (&buffers)[6]) {
  pack_faces_with(LaunchOn{space}, a, s, buffers);
}

void unpack_faces(const Space& space, const Field& a, const BlockShape& s, const Field (&data)[6]) {
  unpack_faces_with(LaunchOn{space}, a, s, data);
}

void update_pairs(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                  std::int64_t chunk) {
  if (s.n[2] % 2 != 0) throw std::invalid_argument("jacobi: update_pairs needs an even z extent");
  march_pairs(LaunchOn{space}, a, b, s, interior(s), chunk);
}

void update_scalar(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                   std::int64_t chunk) {
  march_ahead<1>(LaunchOn{space}, "jacobi::update_scalar", ReadField(a), WriteField(b), s,
                 interior(s), chunk);
}

void fused_update(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                  const Field (&receive)[6], const Field (&send)[6], std::int64_t chunk) {
  fused_step(LaunchOn{space}, a, b, s, receive, send, chunk);
}

void update_inner(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                  const Field (&receive)[6], const Field (&send)[6], std::int64_t chunk) {
  update_with(LaunchOn{space}, a, b, s, inner_box(s, step_faces(receive, send)), chunk);
}

void update_boundary(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                     const Field (&receive)[6], const Field (&send)[6]) {
  update_boundary_with(LaunchOn{space}, a, b, s, step_faces(receive, send));
}

void update_inner(kodo::KernelBatch& batch, const Field& a, const Field& b, const BlockShape& s,
                  const Field (&receive)[6], const Field (&send)[6]) {
  update_with(LaunchInBatch{batch}, a, b, s, inner_box(s, step_faces(receive, send)), kAutoChunk);
}

void update_boundary(kodo::KernelBatch& batch, const Field& a, const Field& b, const BlockShape& s,
                     const Field (&receive)[6], const Field (&send)[6]) {
  update_boundary_with(LaunchInBatch{batch}, a, b, s, step_faces(receive, send));
}

void step(const Space& space, Fusion fusion, const Field& a, const Field& b, const BlockShape& s,
          const Field (&receive)[6], const Field (&send)[6]) {
  step_with(LaunchOn{space}, fusion, a, b, s, receive, send);
}

StepGraph step_graph(Fusion fusion, const Field& a, const Field& b, const BlockShape& s,
                     const Field (&receive)[6], const Field (&send)[6]) {
  auto graph = Kokkos::Experimental::create_graph([&](const auto& root) {
    step_with(LaunchInGraph{root}, fusion, a, b, s, receive, send);
  });
  graph.instantiate();
  return graph;
}

void update_flat(const Space& space, const Field& a, const Field& b, const BlockShape& s) {
  const std::int64_t sx = (s.n[1] + 2) * (s.n[2] + 2), sy = s.n[2] + 2;
  Kokkos::parallel_for(
      "jacobi::update_flat", Policy(space, 0, s.interior_size()), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t z = i % s.n[2] + 1, y = (i / s.n[2]) % s.n[1] + 1,
                           x = i / (s.n[2] * s.n[1]) + 1;
        const std::int64_t c = s.at(x, y, z);
        b(c) = stencil(a(c), a(c - sx), a(c + sx), a(c - sy), a(c + sy), a(c - 1), a(c + 1));
      });
}

}  // namespace jacobi
