// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Probe (not part of the build; CUDA Kokkos only): what recording a rank's unit-steps as a
// CUDA graph by stream capture would cost on the host, against issuing the same work
// directly. Issue 51 asks the runtime to turn repeated steps of ordinary units (their own
// Kokkos launches and channel copies) into one device program by itself; whether stream
// capture of the application's own calls can do that cheaply is what this measures.
//
//   $KOKKOS/bin/nvcc_wrapper -O2 -std=c++20 -arch=sm_90 --expt-extended-lambda \
//     -I$KOKKOS/include capture_floors.cpp -L$KOKKOS/lib -lkokkoscore -lcuda -ldl \
//     -o capture_floors && ./capture_floors [--units 8]
//
// Rows: host_us per operation (median of 9 batches, calls back to back) and dev_us (GPU
// time per operation, events around the batch). A "unit-step" is what Jacobi3D's task path
// issues per block and iteration at fusion none with 3 neighbours: a pack kernel, 3 face
// copies into other units' buffers, 3 unpack kernels and an update kernel, on the unit's
// own stream, plus one completion mark.
#include <Kokkos_Core.hpp>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace {

using Policy = Kokkos::RangePolicy<Kokkos::Cuda, Kokkos::IndexType<std::int64_t>>;
using Field = Kokkos::View<double*, Kokkos::CudaSpace>;

// A kernel's functor of the size kodo's apps launch (six face pointers in, six out).
struct Face6 {
  const double* in[6];
  double* out[6];
  std::int64_t count;
  double value;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    for (int f = 0; f < 6; ++f)
      if (in[f] && out[f]) out[f][i] = in[f][i] + value;
  }
};

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now()
                                                       .time_since_epoch())
      .count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "capture_floors: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(CUresult e, const char* what) {
  if (e != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(e, &s);
    std::fprintf(stderr, "capture_floors: %s: %s\n", what, s ? s : "?");
    std::exit(1);
  }
}

cudaStream_t timing_stream;
cudaEvent_t e0, e1;

// Host and device time per call of f (n calls per batch, 9 batches).
// `before` and `after` run outside the timed calls (a capture's begin and end).
void row(
    const char* what, int n, const std::function<void()>& f,
    const std::function<void()>& before = [] {}, const std::function<void()>& after = [] {}) {
  std::vector<double> host, dev;
  for (int r = 0; r < 9; ++r) {
    check(cudaDeviceSynchronize(), "sync");
    check(cudaEventRecord(e0, timing_stream), "record");
    before();
    const double t0 = now_us();
    for (int i = 0; i < n; ++i) f();
    const double t1 = now_us();
    after();
    check(cudaDeviceSynchronize(), "sync");
    check(cudaEventRecord(e1, timing_stream), "record");
    check(cudaEventSynchronize(e1), "event sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    host.push_back((t1 - t0) / n);
    dev.push_back(ms * 1000.0 / n);
  }
  std::printf("%-72s %9.3f %9.3f\n", what, median(host), median(dev));
  std::fflush(stdout);
}

struct Unit {
  cudaStream_t stream;
  Kokkos::Cuda exec;
  Field field, faces_in[3], faces_out[3];
  cudaEvent_t done;
};

}  // namespace

int main(int argc, char** argv) {
  int units_n = 8;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--units") == 0) units_n = std::atoi(argv[i + 1]);
  Kokkos::initialize(argc, argv);
  {
    check(cudaStreamCreateWithFlags(&timing_stream, cudaStreamNonBlocking), "stream");
    check(cudaEventCreate(&e0), "event");
    check(cudaEventCreate(&e1), "event");
    std::uint64_t* counter = nullptr;
    check(cudaHostAlloc(reinterpret_cast<void**>(&counter), 8, cudaHostAllocMapped), "pinned");
    CUdeviceptr counter_dev = 0;
    check(cuMemHostGetDevicePointer(&counter_dev, counter, 0), "mapped pointer");

    const std::int64_t face = 96 * 96;  // a 96^3 block's face: Jacobi3D 192^3 at ODF 8
    std::vector<Unit> units(units_n);
    for (auto& u : units) {
      check(cudaStreamCreateWithFlags(&u.stream, cudaStreamNonBlocking), "stream");
      u.exec = Kokkos::Cuda(u.stream);
      u.field = Field("field", face * 4);
      for (int f = 0; f < 3; ++f) {
        u.faces_in[f] = Field("in", face);
        u.faces_out[f] = Field("out", face);
      }
      check(cudaEventCreateWithFlags(&u.done, cudaEventDisableTiming), "event");
    }
    Kokkos::fence();
    auto kernel = [&](Unit& u, int which) {
      Face6 k{};
      for (int f = 0; f < 3; ++f) {
        k.in[f] = which == 0 ? u.field.data() : u.faces_in[f].data();
        k.out[f] = which == 0 ? u.faces_out[f].data() : u.field.data();
      }
      k.count = face;
      k.value = 1.0;
      Kokkos::parallel_for("probe", Policy(u.exec, 0, face), k);
    };
    // Unit i sends its three faces to units i+1, i+2, i+3 (mod n).
    auto unit_step = [&](int i, bool mark) {
      Unit& u = units[i];
      kernel(u, 0);  // pack
      for (int f = 0; f < 3; ++f) {
        Unit& to = units[(i + 1 + f) % units_n];
        check(cudaMemcpyAsync(to.faces_in[f].data(), u.faces_out[f].data(), face * 8,
                              cudaMemcpyDeviceToDevice, u.stream),
              "copy");
      }
      for (int f = 0; f < 3; ++f) kernel(u, 1);  // unpacks
      kernel(u, 2);                              // update
      if (mark)
        check(cuStreamWriteValue64(reinterpret_cast<CUstream>(u.stream), counter_dev, 1,
                                   CU_STREAM_WRITE_VALUE_DEFAULT),
              "mark");
    };

    std::printf("# %d units, faces of %lld doubles\n", units_n, static_cast<long long>(face));
    std::printf("%-72s %9s %9s\n", "# what", "host_us", "dev_us");
    Unit& u0 = units[0];
    row("Kokkos parallel_for (Face6, 9216), direct", 2000, [&] { kernel(u0, 1); });
    row("cudaMemcpyAsync D2D 73,728 B, direct", 2000, [&] {
      check(cudaMemcpyAsync(units[1].faces_in[0].data(), u0.faces_out[0].data(), face * 8,
                            cudaMemcpyDeviceToDevice, u0.stream),
            "copy");
    });
    row("cuStreamWriteValue64 to pinned host (a kodo mark), direct", 2000, [&] {
      check(cuStreamWriteValue64(reinterpret_cast<CUstream>(u0.stream), counter_dev, 1,
                                 CU_STREAM_WRITE_VALUE_DEFAULT),
            "mark");
    });

    // The same calls under stream capture (relaxed: Kokkos may query the device).
    cudaGraph_t g = nullptr;
    auto begin = [&] {
      check(cudaStreamBeginCapture(u0.stream, cudaStreamCaptureModeRelaxed), "begin capture");
    };
    auto end = [&] {
      check(cudaStreamEndCapture(u0.stream, &g), "end capture");
      check(cudaGraphDestroy(g), "destroy");
    };
    row("Kokkos parallel_for (Face6, 9216), captured", 2000, [&] { kernel(u0, 1); }, begin, end);
    row(
        "cudaMemcpyAsync D2D 73,728 B, captured", 2000,
        [&] {
          check(cudaMemcpyAsync(units[1].faces_in[0].data(), u0.faces_out[0].data(), face * 8,
                                cudaMemcpyDeviceToDevice, u0.stream),
                "copy");
        },
        begin, end);
    row(
        "cuStreamWriteValue64 to pinned host, captured", 2000,
        [&] {
          check(cuStreamWriteValue64(reinterpret_cast<CUstream>(u0.stream), counter_dev, 1,
                                     CU_STREAM_WRITE_VALUE_DEFAULT),
                "mark");
        },
        begin, end);

    // A whole rank step: every unit's step, issued directly (each with its mark; the row
    // "issued directly, per step" below) ...
    // ... or captured into one graph: the first unit's stream opens the capture, every
    // other unit's stream joins it by an event, and joins back at the end.
    cudaEvent_t fork;
    check(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "event");
    auto capture_step = [&] {
      check(cudaStreamBeginCapture(u0.stream, cudaStreamCaptureModeRelaxed), "begin");
      check(cudaEventRecord(fork, u0.stream), "fork");
      for (int i = 1; i < units_n; ++i)
        check(cudaStreamWaitEvent(units[i].stream, fork, 0), "join capture");
      for (int i = 0; i < units_n; ++i) unit_step(i, false);
      for (int i = 1; i < units_n; ++i) {
        check(cudaEventRecord(units[i].done, units[i].stream), "record");
        check(cudaStreamWaitEvent(u0.stream, units[i].done, 0), "join back");
      }
      check(cuStreamWriteValue64(reinterpret_cast<CUstream>(u0.stream), counter_dev, 1,
                                 CU_STREAM_WRITE_VALUE_DEFAULT),
            "mark");
      cudaGraph_t graph;
      check(cudaStreamEndCapture(u0.stream, &graph), "end");
      return graph;
    };
    cudaGraph_t first = capture_step();
    cudaGraphExec_t exec;
    double t0 = now_us();
    check(cudaGraphInstantiate(&exec, first, 0), "instantiate");
    const double instantiate_us = now_us() - t0;
    std::size_t nodes = 0;
    check(cudaGraphGetNodes(first, nullptr, &nodes), "nodes");
    std::printf("%-72s %9.1f (%zu nodes)\n", "# instantiate the step's graph, once", instantiate_us,
                nodes);
    const double per = 1.0 / units_n;
    auto scaled = [&](const char* what, const std::function<void()>& f) {
      std::vector<double> host;
      for (int r = 0; r < 9; ++r) {
        check(cudaDeviceSynchronize(), "sync");
        const double a = now_us();
        for (int i = 0; i < 200; ++i) f();
        host.push_back((now_us() - a) / 200 * per);
        check(cudaDeviceSynchronize(), "sync");
      }
      std::printf("%-72s %9.3f\n", what, median(host));
      std::fflush(stdout);
    };
    scaled("rank step captured + graph destroyed (capture alone), per unit-step", [&] {
      cudaGraph_t graph = capture_step();
      check(cudaGraphDestroy(graph), "destroy");
    });
    scaled("rank step captured + cudaGraphExecUpdate + launch, per unit-step", [&] {
      cudaGraph_t graph = capture_step();
      cudaGraphExecUpdateResultInfo info;
      check(cudaGraphExecUpdate(exec, graph, &info), "update");
      check(cudaGraphDestroy(graph), "destroy");
      check(cudaGraphLaunch(exec, u0.stream), "launch");
    });
    scaled("rank step captured + launch (no update), per unit-step", [&] {
      cudaGraph_t graph = capture_step();
      check(cudaGraphDestroy(graph), "destroy");
      check(cudaGraphLaunch(exec, u0.stream), "launch");
    });
    scaled("rank step graph launched alone (replay, no capture), per unit-step",
           [&] { check(cudaGraphLaunch(exec, u0.stream), "launch"); });
    row("rank step graph launched alone, per step (device time per step)", 200,
        [&] { check(cudaGraphLaunch(exec, u0.stream), "launch"); });
    row("rank step issued directly, per step (device time per step)", 200, [&] {
      for (int i = 0; i < units_n; ++i) unit_step(i, true);
    });
    check(cudaGraphExecDestroy(exec), "destroy exec");
    check(cudaGraphDestroy(first), "destroy graph");
    Kokkos::fence();
  }
  Kokkos::finalize();
  return 0;
}
