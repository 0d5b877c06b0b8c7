#include "kernels.hpp"

#if defined(JACOBI_HAVE_KOKKOS_KERNELS)
#include <KokkosBlas1_dot.hpp>
#endif

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace jacobi {
namespace {
using Policy = Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>;
using ReadField =
    Kokkos::View<const double*, Space::memory_space, Kokkos::MemoryTraits<Kokkos::Restrict>>;
using WriteField =
    Kokkos::View<double*, Space::memory_space, Kokkos::MemoryTraits<Kokkos::Restrict>>;

// Every kernel below is written once against a launcher, so the same code either runs
// now on a stream (LaunchOn) or becomes the next node of a graph (LaunchInGraph).
// Kernels build their policies without an execution-space instance; LaunchOn adds it.
struct LaunchOn {
  Space space;
  template <class P, class F>
  void operator()(const char* label, const P& policy, const F& functor) const {
    Kokkos::parallel_for(label, P(space, policy.begin(), policy.end()), functor);
  }
};

// Marching a longer chunk keeps more x neighbours in registers but leaves fewer threads:
// below some 2^17 threads an H200 is not filled, and a small block runs faster in
// shorter chunks (perf/results/jacobi_kernel_chunks_h200.csv). CPUs have threads to
// spare at any size, and keep the longest chunk.
std::int64_t choose_chunk(std::int64_t chunk, std::int64_t columns, std::int64_t nx) {
  if (chunk > 0) return chunk;
  chunk = kUpdateChunk;
  if (kodo::host_build) return chunk;
  while (chunk > 4 && (nx + chunk - 1) / chunk * columns < (std::int64_t{1} << 17)) chunk /= 2;
  return chunk;
}

// A box of interior points: [lo[d], hi[d]) along each dimension d, in padded
// coordinates (a block's whole interior is [1, n[d] + 1)).
struct Box {
  std::int64_t lo[3], hi[3];
  std::int64_t extent(int d) const { return hi[d] - lo[d]; }
  bool empty() const { return extent(0) <= 0 || extent(1) <= 0 || extent(2) <= 0; }
  std::int64_t size() const { return empty() ? 0 : extent(0) * extent(1) * extent(2); }
};

Box interior(const BlockShape& s) { return {{1, 1, 1}, {s.n[0] + 1, s.n[1] + 1, s.n[2] + 1}}; }

struct LaunchInGraph {
  Kokkos::Experimental::GraphNodeRef<Space> node;
  template <class P, class F>
  void operator()(const char* label, const P& policy, const F& functor) {
    node = node.then_parallel_for(std::string(label), policy, functor);
  }
};

// Each thread marches along x through `chunk` points of one (y, z) column of `box`,
// keeping the x neighbours in registers and issuing the loads of the next `Ahead` planes
// before this plane's store; adjacent threads take adjacent z, so loads are coalesced.
template <int Ahead, class Launch, class In, class Out>
void march_ahead(Launch&& launch, const char* label, const In& a, const Out& b, const BlockShape& s,
                 const Box& box, std::int64_t chunk) {
  if (box.empty()) return;
  const std::int64_t sx = (s.n[1] + 2) * (s.n[2] + 2), sy = s.n[2] + 2;
  const std::int64_t nx = box.extent(0), ny = box.extent(1), nz = box.extent(2);
  const std::int64_t x_begin = box.lo[0], x_end = box.hi[0], y_begin = box.lo[1],
                     z_begin = box.lo[2];
  chunk = choose_chunk(chunk, ny * nz, nx);
  const std::int64_t chunks = (nx + chunk - 1) / chunk;
  launch(
      label, Policy(0, chunks * ny * nz), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t z = i % nz + z_begin, y = (i / nz) % ny + y_begin, c = i / (nz * ny);
        const std::int64_t x0 = x_begin + c * chunk;
        const std::int64_t x1 = x0 + chunk <= x_end ? x0 + chunk : x_end;
        std::int64_t p = s.at(x0, y, z);
        // ring[0] = plane x-1, ring[1] = x, ring[2..] = x+1 .. x+Ahead (when inside)
        double ring[Ahead + 2];
        for (int k = 0; k < Ahead + 2; ++k) ring[k] = x0 - 1 + k <= x1 ? a(p + (k - 1) * sx) : 0.0;
        for (std::int64_t x = x0; x < x1; ++x, p += sx) {
          const double ym = a(p - sy), yp = a(p + sy), zm = a(p - 1), zp = a(p + 1);
          const double next = x + Ahead + 1 <= x1 ? a(p + (Ahead + 1) * sx) : 0.0;
          b(p) = stencil(ring[1], ring[0], ring[2], ym, yp, zm, zp);
          for (int k = 0; k < Ahead + 1; ++k) ring[k] = ring[k + 1];
          ring[Ahead + 1] = next;
        }
      });
}

// Two neighbouring z points, loaded and stored as one 16-byte access.
struct alignas(16) Pair {
  double lo, hi;
};

// One thread's column of pairs, from padded pair index q through `steps` x planes.
// The pointers are restrict-qualified as parameters (qualifiers on a lambda's captures
// do not reach the compiler). The loop's form matters: a count-down loop compiled to
// code 4% slower on an H200 than this count-up one.
KOKKOS_INLINE_FUNCTION void march_column(const Pair* __restrict__ a, Pair* __restrict__ b,
                                         std::int64_t q, std::int64_t steps, std::int64_t sxq,
                                         std::int64_t syq, bool lo_inside, bool hi_inside) {
  const double* a1 = reinterpret_cast<const double*>(a);
  double* b1 = reinterpret_cast<double*>(b);
  Pair xm = a[q - sxq], cc = a[q];
  for (std::int64_t step = 0; step < steps; ++step) {
    const Pair xp = a[q + sxq], ym = a[q - syq], yp = a[q + syq];
    const double zl = a1[2 * q - 1], zr = a1[2 * q + 2];
    Pair out;
    out.lo = stencil(cc.lo, xm.lo, xp.lo, ym.lo, yp.lo, zl, cc.hi);
    out.hi = stencil(cc.hi, xm.hi, xp.hi, ym.hi, yp.hi, cc.lo, zr);
    if (lo_inside && hi_inside) {
      b[q] = out;
    } else {
      if (lo_inside) b1[2 * q] = out.lo;
      if (hi_inside) b1[2 * q + 1] = out.hi;
    }
    xm = cc;
    cc = xp;
    q += sxq;
  }
}

// The thread layout of every march over pairs of padded z positions (2k, 2k+1): a
// warp takes 32 consecutive pairs of one row (coalesced), and a 128-thread block the
// same pairs of 4 neighbouring rows, so the y neighbours of its inner rows come from L1
// (+4% over one row per block, perf/results/jacobi_kernel_explore_row_tiles_h200.csv).
// Each thread hands its column -- pair k of interior row y (0-based), x planes
// [x0, x1) -- to `column`. The thread index is split with `Index` arithmetic: 32-bit
// when the thread count allows (a 64-bit division is a long software sequence on GPUs);
// offsets into the field stay 64-bit, so a block may exceed 2^31 points.
template <class Index, class Column>
struct PairColumns {
  static constexpr int kRows = 4;
  Column column;
  std::int64_t x_begin, x_end, y_begin, rows, k_begin, pairs, chunk;
  Index pair_tiles, row_tiles;

  KOKKOS_INLINE_FUNCTION void operator()(Index i) const {
    const Index lane = i % 32, warp = i / 32, row = warp % kRows, tile = warp / kRows;
    const std::int64_t k = static_cast<std::int64_t>(tile % pair_tiles) * 32 + lane;
    const std::int64_t y = static_cast<std::int64_t>(tile / pair_tiles % row_tiles) * kRows + row;
    const std::int64_t c = tile / pair_tiles / row_tiles;
    if (k >= pairs || y >= rows) return;
    const std::int64_t x0 = x_begin + c * chunk;
    column(k_begin + k, y_begin + y, x0, x0 + chunk <= x_end ? x0 + chunk : x_end);
  }
};

// The columns of the pairs that hold the points of `box`: pairs k_begin .. k_end - 1
// (the first and last may hold a point outside the box, which `column` must skip).
// Needs padded rows of even length (z extent even), so that pairs are aligned.
// `MinBlocks` thread blocks per SM caps the registers a thread may use: more resident
// warps hide more memory latency, until values spill (see the callers).
template <int MinBlocks, class Launch, class Column>
void for_each_pair_column(Launch&& launch, const char* label, const Box& box, std::int64_t chunk,
                          const Column& column) {
  if (box.empty()) return;
  const std::int64_t nx = box.extent(0), rows = box.extent(1);
  const std::int64_t k_begin = box.lo[2] / 2, pairs = (box.hi[2] + 1) / 2 - k_begin;
  chunk = choose_chunk(chunk, rows * pairs, nx);
  const std::int64_t chunks = (nx + chunk - 1) / chunk;
  const auto run = [&](auto index) {
    using Index = decltype(index);
    using Functor = PairColumns<Index, Column>;
    const Index pair_tiles = (pairs + 31) / 32,
                row_tiles = (rows + Functor::kRows - 1) / Functor::kRows;
    using Policy = Kokkos::RangePolicy<Space, Kokkos::IndexType<Index>,
                                       Kokkos::LaunchBounds<32 * Functor::kRows, MinBlocks>>;
    launch(label,
           Policy(0, static_cast<Index>(chunks) * row_tiles * pair_tiles * 32 * Functor::kRows),
           Functor{column, box.lo[0], box.hi[0], box.lo[1] - 1, rows, k_begin, pairs, chunk,
                   pair_tiles, row_tiles});
  };
  // Thread count, rounded up to whole tiles of 32 pairs x 4 rows.
  const std::int64_t threads = chunks * ((rows + 3) / 4 * 4) * ((pairs + 31) / 32 * 32);
  if (threads <= std::numeric_limits<std::uint32_t>::max())
    run(std::uint32_t{});
  else
    run(std::int64_t{});
}

// The update of `box` over pairs: every access to the centre, x and y neighbours is a
// 16-byte load; the z neighbours outside the pair are two 8-byte loads. Positions of a
// pair outside the box (ghosts, or points left to another kernel) are read, never
// written.
template <class Launch>
void march_pairs(Launch&& launch, const Field& af, const Field& bf, const BlockShape& s,
                 const Box& box, std::int64_t chunk) {
  const Pair* a = reinterpret_cast<const Pair*>(af.data());
  Pair* b = reinterpret_cast<Pair*>(bf.data());
  const std::int64_t sxq = (s.n[1] + 2) * (s.n[2] + 2) / 2, syq = (s.n[2] + 2) / 2;
  const std::int64_t z_begin = box.lo[2], z_end = box.hi[2];
  // 9 blocks of 128 threads per SM leave 56 registers a thread, no spill: 36 resident
  // warps instead of the 32 that the 60 registers chosen freely allow, 9% faster at
  // 192^3 (perf/results/jacobi_kernel_min_blocks_h200x2.csv).
  for_each_pair_column<9>(
      launch, "jacobi::update_pairs", box, chunk,
      KOKKOS_LAMBDA(std::int64_t k, std::int64_t y, std::int64_t x0, std::int64_t x1) {
        march_column(a, b, x0 * sxq + (y + 1) * syq + k, x1 - x0, sxq, syq, 2 * k >= z_begin,
                     2 * k + 1 < z_end);
      });
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

BlockPlace place_block(const Grid& grid, const kodo::Extent3& blocks, const kodo::Index3& index) {
  const std::int64_t global[3] = {grid.x, grid.y, grid.z},
                     parts[3] = {blocks.x, blocks.y, blocks.z}, at[3] = {index.x, index.y, index.z};
  BlockPlace p{};
  for (int d = 0; d < 3; ++d) {
    const auto r = kodo::block_range(global[d], parts[d], at[d]);
    p.origin[d] = r.begin;
    p.shape.n[d] = r.size;
    p.has_neighbour[2 * d] = at[d] > 0;
    p.has_neighbour[2 * d + 1] = at[d] + 1 < parts[d];
  }
  return p;
}

kodo::Index3 across_face(kodo::Index3 index, int f) {
  (f / 2 == 0 ? index.x : f / 2 == 1 ? index.y : index.z) += f % 2 == 0 ? -1 : 1;
  return index;
}

void init_field(const Field& a, const BlockShape& s, const Grid& g, const std::int64_t origin[3]) {
  const std::int64_t ox = origin[0], oy = origin[1], oz = origin[2];
  Kokkos::parallel_for(
      "jacobi::init", Policy(0, s.padded_size()), KOKKOS_LAMBDA(std::int64_t i) {
        const std::int64_t z = i % (s.n[2] + 2), y = (i / (s.n[2] + 2)) % (s.n[1] + 2),
                           x = i / ((s.n[2] + 2) * (s.n[1] + 2));
        const std::int64_t gx = ox + x - 1, gy = oy + y - 1, gz = oz + z - 1;
        const bool outside = gx < 0 || gy < 0 || gz < 0 || gx >= g.x || gy >= g.y || gz >= g.z;
        a(i) = outside ? boundary_value(g, gx, gy, gz) : 0.0;
      });
}

namespace {

template <class Launch>
void pack_face_with(Launch&& launch, const Field& a, const BlockShape& s, int f,
                    const Field& buffer) {
  const std::int64_t layer = f % 2 == 0 ? 1 : s.n[f / 2];
  launch(
      "jacobi::pack", Policy(0, s.face_size(f)),
      KOKKOS_LAMBDA(std::int64_t k) { buffer(k) = a(s.face_point(f, k, layer)); });
}

template <class Launch>
void unpack_face_with(Launch&& launch, const Field& a, const BlockShape& s, int f,
                      const Field& data) {
  const std::int64_t layer = f % 2 == 0 ? 0 : s.n[f / 2] + 1;
  launch(
      "jacobi::unpack", Policy(0, s.face_size(f)),
      KOKKOS_LAMBDA(std::int64_t k) { a(s.face_point(f, k, layer)) = data(k); });
}

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
      "jacobi::pack_faces", Policy(0, set.start[6]), KOKKOS_LAMBDA(std::int64_t i) {
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
      "jacobi::unpack_faces", Policy(0, set.start[6]), KOKKOS_LAMBDA(std::int64_t i) {
        const int f = range_of(set.start, i);
        const std::int64_t layer = f % 2 == 0 ? 0 : s.n[f / 2] + 1;
        a(s.face_point(f, i - set.start[f], layer)) = set.buffer[f][i - set.start[f]];
      });
}

template <class Launch>
void update_with(Launch&& launch, const Field& a, const Field& b, const BlockShape& s,
                 const Box& box, std::int64_t chunk) {
  if constexpr (!kodo::host_build)
    if (s.n[2] % 2 == 0) return march_pairs(launch, a, b, s, box, chunk);
  march_ahead<1>(launch, "jacobi::update", ReadField(a), WriteField(b), s, box, chunk);
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
      "jacobi::fused_step", IndexPolicy(0, static_cast<Index>(chunks * ny * nz)),
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
      "jacobi::update_boundary", Policy(0, start[6]), KOKKOS_LAMBDA(std::int64_t i) {
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

void pack_face(const Space& space, const Field& a, const BlockShape& s, int f,
               const Field& buffer) {
  pack_face_with(LaunchOn{space}, a, s, f, buffer);
}

void unpack_face(const Space& space, const Field& a, const BlockShape& s, int f,
                 const Field& data) {
  unpack_face_with(LaunchOn{space}, a, s, f, data);
}

void pack_faces(const Space& space, const Field& a, const BlockShape& s,
                const Field (&buffers)[6]) {
  pack_faces_with(LaunchOn{space}, a, s, buffers);
}

void unpack_faces(const Space& space, const Field& a, const BlockShape& s, const Field (&data)[6]) {
  unpack_faces_with(LaunchOn{space}, a, s, data);
}

void update(const Space& space, const Field& a, const Field& b, const BlockShape& s,
            std::int64_t chunk) {
  update_with(LaunchOn{space}, a, b, s, interior(s), chunk);
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

#if defined(JACOBI_HAVE_KOKKOS_KERNELS)
// Kokkos Kernels' dot takes vectors, and the interior of a padded block is not one: the
// difference goes through a scratch vector, a slab of x planes at a time, so the scratch
// stays bounded (by default 2^24 points, 128 MiB) however large the block.
double difference_squares(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                          std::int64_t scratch_points) {
  const std::int64_t plane = s.n[1] * s.n[2];
  const std::int64_t planes = std::min(s.n[0], std::max<std::int64_t>(1, scratch_points / plane));
  const Field d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "jacobi::difference"),
                planes * plane);
  double sum = 0;
  for (std::int64_t x0 = 0; x0 < s.n[0]; x0 += planes) {
    const std::int64_t count = std::min(planes, s.n[0] - x0) * plane;
    Kokkos::parallel_for(
        "jacobi::difference", Policy(space, 0, count), KOKKOS_LAMBDA(std::int64_t i) {
          const std::int64_t z = i % s.n[2], y = (i / s.n[2]) % s.n[1], x = x0 + i / plane;
          const std::int64_t c = s.at(x + 1, y + 1, z + 1);
          d(i) = a(c) - b(c);
        });
    const auto part = Kokkos::subview(d, Kokkos::make_pair(std::int64_t{0}, count));
    sum += KokkosBlas::dot(space, part, part);  // fences `space`
  }
  return sum;
}

const char* residual_method() { return "Kokkos Kernels dot"; }
#else
double difference_squares(const Space& space, const Field& a, const Field& b, const BlockShape& s,
                          std::int64_t /*scratch_points: no scratch here*/) {
  Kokkos::View<double, Space::memory_space> result("jacobi::difference");
  Kokkos::parallel_reduce(
      "jacobi::difference", Policy(space, 0, s.interior_size()),
      KOKKOS_LAMBDA(std::int64_t i, double& acc) {
        const std::int64_t z = i % s.n[2], y = (i / s.n[2]) % s.n[1], x = i / (s.n[2] * s.n[1]);
        const std::int64_t c = s.at(x + 1, y + 1, z + 1);
        acc += (a(c) - b(c)) * (a(c) - b(c));
      },
      result);
  double sum = 0;
  Kokkos::deep_copy(space, sum, result);
  space.fence("jacobi::difference");
  return sum;
}

const char* residual_method() { return "Kokkos reduction"; }
#endif

std::uint64_t checksum(const Space& space, const Field& a, const BlockShape& s, const Grid& g,
                       const std::int64_t origin[3]) {
  const std::int64_t ox = origin[0], oy = origin[1], oz = origin[2];
  // Into device memory, then copied: reducing straight into a host scalar on a stream
  // instance let the device write the host stack on an H200 (Kokkos 4.6, CUDA 13).
  Kokkos::View<std::uint64_t, Space::memory_space> result("jacobi::checksum");
  Kokkos::parallel_reduce(
      "jacobi::checksum", Policy(space, 0, s.interior_size()),
      KOKKOS_LAMBDA(std::int64_t i, std::uint64_t& acc) {
        const std::int64_t z = i % s.n[2], y = (i / s.n[2]) % s.n[1], x = i / (s.n[2] * s.n[1]);
        const std::int64_t global = ((ox + x) * g.y + (oy + y)) * g.z + (oz + z);
        acc += point_hash(global, a(s.at(x + 1, y + 1, z + 1)));
      },
      result);
  std::uint64_t sum = 0;
  Kokkos::deep_copy(space, sum, result);
  space.fence("jacobi::checksum");
  return sum;
}

}  // namespace jacobi
