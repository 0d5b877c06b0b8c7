// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Probe (not part of the build): where the one-way time of a device-only hop between two
// GPUs of one node goes, without kodo. Two ranks, one GPU each, ping-pong, every hop
// enqueued up front, rank 0 times with events; the data that comes back is checked.
// Its results chose how same-node channels publish a transfer (a kernel's stores, not
// stream memory operations): perf/results/device_hop_probe_h200.csv.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -I$MPI/include device_hop.cu -L$MPI/lib -lmpi -lcuda
//   mpirun -n 2 ./a.out --mode MODE [--iters 2000]
// Modes (flags in the receiver's device memory, IPC-mapped by the sender):
//   ce_memop      cudaMemcpyAsync into peer + cuStreamWriteValue64 ; cuStreamWaitValue64
//   memop         cuStreamWriteValue64 ; cuStreamWaitValue64 (no data)
//   memop_host    same, flags in cudaHostRegister'ed shm
//   kern_memop    kernel: copy + threadfence_system + flag store ; cuStreamWaitValue64
//   kern_spin     kernel: copy + fence + flag ; kernel<<<1,1>>> spinning on own flag
//   fused         one kernel per hop: spin on own flag, then copy + fence + flag
//   ce_spin       cudaMemcpyAsync + WriteValue64 ; spin kernel
//   kern_spin_host kern_spin with the flags in cudaHostRegister'ed shm
//   route, route_host  what a same-node channel with waits on streams does per hop: a copy
//                 kernel whose every block first waits for the peer to have consumed the
//                 previous transfer, a publishing kernel, a one-thread wait kernel at the
//                 receiver, its consumed count written by a stream memory operation; flags
//                 in device memory (route) or in cudaHostRegister'ed shm (route_host)
#include <cuda.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::fprintf(stderr, "%d %s: %s\n", __LINE__, #x, cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 1);} } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = nullptr; cuGetErrorString(r_, &s_); std::fprintf(stderr, "%d %s: %s\n", __LINE__, #x, s_ ? s_ : "?"); MPI_Abort(MPI_COMM_WORLD, 1);} } while (0)

__global__ void fill(unsigned char* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<unsigned char>((i * 2654435761u + seed) >> 13);
}
__device__ void copy_body(unsigned char* dst, const unsigned char* src, std::size_t n) {
  const std::size_t words = n / 16;
  auto* d = reinterpret_cast<uint4*>(dst);
  auto* s = reinterpret_cast<const uint4*>(src);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x) d[i] = s[i];
  for (std::size_t i = words * 16 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) dst[i] = src[i];
}
// Last block done raises the flag: a counter per launch.
__device__ unsigned int blocks_done;
__device__ void raise_flag(volatile unsigned long long* flag, unsigned long long v) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    if (gridDim.x == 1) { *flag = v; return; }
    unsigned int t = atomicAdd(&blocks_done, 1u);
    if (t == gridDim.x - 1) { blocks_done = 0; __threadfence_system(); *flag = v; }
  }
}
__global__ void send_kernel(unsigned char* dst, const unsigned char* src, std::size_t n, volatile unsigned long long* flag, unsigned long long v) {
  copy_body(dst, src, n);
  raise_flag(flag, v);
}
// Every block's first thread waits for *consumed >= v (the receiver freed the buffer).
__global__ void route_copy_kernel(unsigned char* dst, const unsigned char* src, std::size_t n,
                                  volatile unsigned long long* consumed, unsigned long long v) {
  __shared__ int go;
  if (threadIdx.x == 0) {
    while (*consumed < v) __nanosleep(200);
    __threadfence_system();
    go = 1;
  }
  __syncthreads();
  if (go) copy_body(dst, src, n);
}
__global__ void publish_kernel(volatile unsigned long long* flag, unsigned long long v) {
  __threadfence_system();
  if (threadIdx.x == 0) *flag = v;
}
__global__ void spin_kernel(volatile unsigned long long* flag, unsigned long long v) {
  while (*flag < v) {}
}
__global__ void fused_kernel(volatile unsigned long long* own, unsigned long long wait_for, unsigned char* dst, const unsigned char* src, std::size_t n, volatile unsigned long long* flag, unsigned long long v) {
  if (threadIdx.x == 0) while (*own < wait_for) {}
  __syncthreads();
  __threadfence();
  copy_body(dst, src, n);
  raise_flag(flag, v);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string mode = "memop";
  int iters = 2000;
  std::size_t most = std::size_t(64) << 20;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--mode")) mode = argv[a + 1];
    if (!std::strcmp(argv[a], "--iters")) iters = std::atoi(argv[a + 1]);
    if (!std::strcmp(argv[a], "--most")) most = std::strtoull(argv[a + 1], nullptr, 10);
  }
  CK(cudaSetDevice(rank));
  CK(cudaFree(nullptr));
  const int peer = 1 - rank;
  unsigned char *buf = nullptr, *src = nullptr;
  CK(cudaMalloc(&buf, most));
  CK(cudaMalloc(&src, most));
  unsigned long long *own = nullptr, *theirs = nullptr;
  const bool host_flags = mode == "memop_host" || mode == "kern_spin_host" || mode == "route_host";
  if (host_flags) {
    std::string name = "/kodo_hop_" + std::to_string(getpid());
    int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) MPI_Abort(MPI_COMM_WORLD, 3);
    void* mine = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    std::memset(mine, 0, 4096);
    CK(cudaHostRegister(mine, 4096, cudaHostRegisterPortable | cudaHostRegisterMapped));
    CK(cudaHostGetDevicePointer((void**)&own, mine, 0));
    char n1[64] = {}, n2[64] = {};
    std::snprintf(n1, 64, "%s", name.c_str());
    MPI_Sendrecv(n1, 64, MPI_CHAR, peer, 0, n2, 64, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int pfd = shm_open(n2, O_RDWR, 0600);
    void* th = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
    CK(cudaHostRegister(th, 4096, cudaHostRegisterPortable | cudaHostRegisterMapped));
    CK(cudaHostGetDevicePointer((void**)&theirs, th, 0));
    MPI_Barrier(MPI_COMM_WORLD);
    shm_unlink(name.c_str());
  } else {
    CK(cudaMalloc(&own, 4096));
    CK(cudaMemset(own, 0, 4096));
    cudaIpcMemHandle_t m{}, t{};
    CK(cudaIpcGetMemHandle(&m, own));
    MPI_Sendrecv(&m, sizeof m, MPI_BYTE, peer, 1, &t, sizeof t, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CK(cudaIpcOpenMemHandle((void**)&theirs, t, cudaIpcMemLazyEnablePeerAccess));
  }
  unsigned char* peer_buf = nullptr;
  {
    cudaIpcMemHandle_t m{}, t{};
    CK(cudaIpcGetMemHandle(&m, buf));
    MPI_Sendrecv(&m, sizeof m, MPI_BYTE, peer, 2, &t, sizeof t, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CK(cudaIpcOpenMemHandle((void**)&peer_buf, t, cudaIpcMemLazyEnablePeerAccess));
  }
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t s;
  CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, hi));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const bool data = mode != "memop" && mode != "memop_host";
  if (rank == 0) std::printf("mode,bytes,iters,one_way_us,GB_per_s,check\n");
  unsigned long long count = 0;
  for (std::size_t bytes = 8; bytes <= (data ? most : 8); bytes *= 4) {
    const int n = bytes >= (std::size_t(1) << 22) ? 20 : iters;
    fill<<<256, 256, 0, s>>>(src, bytes, static_cast<unsigned>(bytes));
    CK(cudaStreamSynchronize(s));
    MPI_Barrier(MPI_COMM_WORLD);
    const int blocks = static_cast<int>(std::min<std::size_t>(528, (bytes + 4095) / 4096));
    auto send = [&](const unsigned char* from, unsigned long long v) {
      if (mode == "route" || mode == "route_host") {
        route_copy_kernel<<<blocks, 256, 0, s>>>(peer_buf, from, bytes, own + 1, v - 1);
        publish_kernel<<<1, 32, 0, s>>>(theirs, v);
      } else if (mode == "ce_memop" || mode == "ce_spin") {
        CK(cudaMemcpyAsync(peer_buf, from, bytes, cudaMemcpyDeviceToDevice, s));
        CU(cuStreamWriteValue64(s, (CUdeviceptr)theirs, v, 0));
      } else if (mode == "memop" || mode == "memop_host") {
        CU(cuStreamWriteValue64(s, (CUdeviceptr)theirs, v, 0));
      } else {
        send_kernel<<<blocks, 256, 0, s>>>(peer_buf, from, bytes, theirs, v);
      }
    };
    auto wait = [&](unsigned long long v) {
      if (mode == "route" || mode == "route_host") {
        spin_kernel<<<1, 1, 0, s>>>(own, v);
        CU(cuStreamWriteValue64(s, (CUdeviceptr)(theirs + 1), v, 0));  // consumed
      } else if (mode == "kern_spin" || mode == "ce_spin" || mode == "kern_spin_host") spin_kernel<<<1, 1, 0, s>>>(own, v);
      else CU(cuStreamWaitValue64(s, (CUdeviceptr)own, v, CU_STREAM_WAIT_VALUE_GEQ));
    };
    CK(cudaEventRecord(e0, s));
    for (int k = 0; k < n; ++k) {
      const unsigned char* from = rank == 0 && k == 0 ? src : buf;
      if (mode == "fused") {
        if (rank == 0) {
          fused_kernel<<<blocks, 256, 0, s>>>(own, k == 0 ? 0 : count, peer_buf, from, bytes, theirs, count + 1);
        } else {
          fused_kernel<<<blocks, 256, 0, s>>>(own, count + 1, peer_buf, buf, bytes, theirs, count + 1);
        }
        if (rank == 0 && k == n - 1) spin_kernel<<<1, 1, 0, s>>>(own, count + 1);
      } else if (rank == 0) {
        send(from, count + 1);
        wait(count + 1);
      } else {
        wait(count + 1);
        send(buf, count + 1);
      }
      ++count;
    }
    CK(cudaEventRecord(e1, s));
    CK(cudaStreamSynchronize(s));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (rank == 0) {
      bool good = true;
      if (data) {
        std::vector<unsigned char> a(bytes), b(bytes);
        CK(cudaMemcpy(a.data(), src, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(b.data(), buf, bytes, cudaMemcpyDeviceToHost));
        good = a == b;
      }
      const double one_way = 1e3 * ms / (2.0 * n);
      std::printf("%s,%zu,%d,%.3f,%.2f,%s\n", mode.c_str(), bytes, n, one_way, bytes / (one_way * 1e3), good ? "same" : "DIFFERENT");
      std::fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
