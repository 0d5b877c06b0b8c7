// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Jacobi 7-point update throughput (GLUP/s: 10^9 lattice updates per second) on one
// device, for the update kernel of apps/jacobi3d and the alternatives it was chosen
// over. All variants must produce the same bits; the program fails if they do not.
//
//   jacobi_kernel_bench [--sizes 256,512,768,1024] [--reps 20] [--csv FILE]
//
// A size is N (an N^3 block) or XxYxZ.

#include "options.hpp"
#include "report.hpp"

#include <kodo/kodo.hpp>

#include <jacobi3d/tuned_kernels.hpp>

#include <array>
#include <cinttypes>
#include <functional>

namespace {

using jacobi::BlockShape;
using jacobi::Field;
using jacobi::Space;

// The trap: a 3D MDRangePolicy with Kokkos' default tiles.
void update_mdrange(const Space& space, const Field& a, const Field& b, const BlockShape& s) {
  const std::int64_t sx = (s.n[1] + 2) * (s.n[2] + 2), sy = s.n[2] + 2;
  Kokkos::parallel_for(
      "jacobi::update_mdrange",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(space, {1, 1, 1},
                                                    {s.n[0] + 1, s.n[1] + 1, s.n[2] + 1}),
      KOKKOS_LAMBDA(std::int64_t x, std::int64_t y, std::int64_t z) {
        const std::int64_t c = s.at(x, y, z);
        b(c) =
            jacobi::stencil(a(c), a(c - sx), a(c + sx), a(c - sy), a(c + sy), a(c - 1), a(c + 1));
      });
}

// Not updates: the memory roofline of this harness (read one array, write another,
// 16 bytes per point), as a plain Kokkos copy of doubles and as a copy of 16-byte
// pairs (which reaches cudaMemcpy's device-to-device rate on an H200). Their "bits"
// differ by design and are not checked.
void copy_doubles(const Space& space, const Field& a, const Field& b, const BlockShape& s) {
  Kokkos::parallel_for(
      "bench::copy_doubles",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, s.padded_size()),
      KOKKOS_LAMBDA(std::int64_t i) { b(i) = a(i); });
}

struct alignas(16) Pair {
  double lo, hi;
};

void copy_pairs(const Space& space, const Field& a, const Field& b, const BlockShape& s) {
  const Pair* from = reinterpret_cast<const Pair*>(a.data());
  Pair* to = reinterpret_cast<Pair*>(b.data());
  Kokkos::parallel_for(
      "bench::copy_pairs",
      Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, s.padded_size() / 2),
      KOKKOS_LAMBDA(std::int64_t i) { to[i] = from[i]; });
}

// The ghost layer of each face into a buffer, in face order.
void copy_ghost_layers(const Field& a, const BlockShape& s, const Field (&buffers)[6]) {
  for (int f = 0; f < 6; ++f) {
    const Field buffer = buffers[f];
    const std::int64_t layer = f % 2 == 0 ? 0 : s.n[f / 2] + 1;
    Kokkos::parallel_for(
        "bench::ghosts", s.face_size(f),
        KOKKOS_LAMBDA(std::int64_t k) { buffer(k) = a(s.face_point(f, k, layer)); });
  }
  Kokkos::fence("bench::ghosts");
}

}  // namespace

int main(int argc, char** argv) {
  kodo::Runtime runtime(argc, argv);
  perf::Options options(
      "jacobi_kernel_bench",
      "Jacobi 7-point update throughput (GLUP/s) on one device for jacobi3d's update kernel "
      "and its alternatives; fails if they do not all produce the same bits.");
  const auto& sizes = options.extents(
      "--sizes", kodo::host_build ? "64,128" : "256,512,768,1024", 1, 4096,
      "blocks, comma-separated: N (an N^3 block) or XxYxZ (a device build's default: "
      "256,512,768,1024)");
  const auto& reps =
      options.integer("--reps", 20, 1, 1 << 20, "timed updates per variant and size");
  const auto& csv_file = options.file("--csv", "also write the rows to FILE");
  if (const auto exit = options.parse(runtime, argc, argv)) return *exit;
  perf::Csv csv(csv_file, argc, argv, "n,variant,seconds_per_update,glups,effective_gbs");
  const int r = static_cast<int>(reps);
  const Space space = runtime.streams().compute(0).space();
  int failures = 0;
  for (const auto& n : sizes) {
    const BlockShape s{{n[0], n[1], n[2]}};
    const jacobi::Grid g{n[0], n[1], n[2]};
    const std::string size = n[0] == n[1] && n[1] == n[2]
                                 ? std::to_string(n[0])
                                 : std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" +
                                       std::to_string(n[2]);
    const std::int64_t origin[3] = {0, 0, 0};
    Field a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "a"), s.padded_size());
    Field b(Kokkos::view_alloc(Kokkos::WithoutInitializing, "b"), s.padded_size());
    // A variant, and whether it must give the update's bits (the copies, for scale, do not).
    struct Variant {
      std::string name;
      std::function<void(const Field&, const Field&)> run;
      bool updates = true;
    };
    std::vector<Variant> variants;
    variants.push_back({"update_auto_chunk",
                        [&](const Field& x, const Field& y) { jacobi::update(space, x, y, s); }});
    for (std::int64_t chunk : {4, 8, 16, 32, 64})
      variants.push_back({"update_chunk" + std::to_string(chunk),
                          [&, chunk](const Field& x, const Field& y) {
                            jacobi::update(space, x, y, s, chunk);
                          }});
    variants.push_back({"update_scalar_auto_chunk", [&](const Field& x, const Field& y) {
                          jacobi::update_scalar(space, x, y, s);
                        }});
    variants.push_back({"flat_range", [&](const Field& x, const Field& y) {
                          jacobi::update_flat(space, x, y, s);
                        }});
    variants.push_back({"mdrange_default_tiles",
                        [&](const Field& x, const Field& y) { update_mdrange(space, x, y, s); }});
    // Fusion C's kernel with all six faces: ghosts read from receive buffers that hold
    // the ghost layers' values (fixed here), every face layer also written to a send buffer.
    Field receive[6], send[6];
    for (int f = 0; f < 6; ++f) {
      receive[f] = Field("receive", s.face_size(f));
      send[f] = Field("send", s.face_size(f));
    }
    jacobi::init_field(a, s, g, origin);
    copy_ghost_layers(a, s, receive);
    variants.push_back({"fused_update_6_faces", [&](const Field& x, const Field& y) {
                          jacobi::fused_update(space, x, y, s, receive, send);
                        }});
    variants.push_back({"overlap_inner_then_boundary_6_faces", [&](const Field& x, const Field& y) {
                          jacobi::update_inner(space, x, y, s, receive, send);
                          jacobi::update_boundary(space, x, y, s, receive, send);
                        }});
    // The two parts of the overlap alone (partial updates: their bits are not checked).
    variants.push_back({"overlap_inner_6_faces",
                        [&](const Field& x, const Field& y) {
                          jacobi::update_inner(space, x, y, s, receive, send);
                        },
                        false});
    variants.push_back({"overlap_boundary_6_faces",
                        [&](const Field& x, const Field& y) {
                          jacobi::update_boundary(space, x, y, s, receive, send);
                        },
                        false});
    variants.push_back({"copy_doubles",
                        [&](const Field& x, const Field& y) { copy_doubles(space, x, y, s); },
                        false});
    variants.push_back({"copy_pairs",
                        [&](const Field& x, const Field& y) { copy_pairs(space, x, y, s); },
                        false});
    std::uint64_t reference = 0;
    for (std::size_t v = 0; v < variants.size(); ++v) {
      auto& [name, run, updates] = variants[v];
      jacobi::init_field(a, s, g, origin);
      jacobi::init_field(b, s, g, origin);
      Kokkos::fence("bench::init");  // init ran on the default instance, updates on `space`
      run(a, b);                     // warm-up, and the first update for the bit check
      run(b, a);
      space.fence();
      const std::uint64_t sum = jacobi::checksum(space, a, s, g, origin);
      if (v == 0) reference = sum;
      if (sum != reference && updates) {
        std::fprintf(stderr, "variant %s gives different bits at n=%s\n", name.c_str(),
                     size.c_str());
        ++failures;
      }
      const double t0 = perf::seconds();
      for (int i = 0; i < r; ++i) run(i % 2 ? b : a, i % 2 ? a : b);
      space.fence();
      const double per = (perf::seconds() - t0) / r;
      const double points = static_cast<double>(s.interior_size());
      char line[256];
      std::snprintf(line, sizeof line, "%s,%s,%.6e,%.2f,%.1f", size.c_str(), name.c_str(), per,
                    points / per * 1e-9, 16 * points / per * 1e-9);
      csv.row(line);
    }
  }
  return failures ? 1 : 0;
}
