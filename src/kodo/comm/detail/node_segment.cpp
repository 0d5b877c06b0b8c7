// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/comm/detail/node_segment.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kodo::detail {
namespace {

constexpr char kMagic[8] = "kodoseg";

std::string system_error(const char* call, const std::string& name) {
  return std::string(call) + " of shared-memory segment " + name +
         " failed: " + std::strerror(errno);
}

// What no process may change in a segment once made: its size (so no truncation can turn
// a peer's read into SIGBUS) and the seals themselves.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

}  // namespace

std::string segment_path(std::int64_t pid, int fd) {
  return "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
}

OwnSegment create_segment(int owner, std::size_t bytes) {
  const std::string name = "kodo.rank" + std::to_string(owner);
  int fd = -1;
#ifdef MFD_NOEXEC_SEAL
  // Not executable, as systems with vm.memfd_noexec=2 require (Linux 6.3 on); older
  // kernels refuse the flag (EINVAL) and take the call without it.
  fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
  if (fd < 0 && errno == EINVAL)
#endif
    fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) throw Error(system_error("memfd_create", name));
  const std::size_t length = kSegmentHeaderBytes + bytes;
  if (ftruncate(fd, static_cast<off_t>(length)) != 0 || fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    const std::string what = system_error("sizing and sealing", name);
    close(fd);
    throw Error(what);
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const std::string what = system_error("mmap", name);
    close(fd);
    throw Error(what);
  }
  SegmentHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kSegmentVersion;
  header.owner = static_cast<std::uint32_t>(owner);
  header.bytes = bytes;
  header.pid = getpid();
  std::memcpy(base, &header, sizeof header);
  return {fd, base};
}

void* map_segment(const std::string& path, int owner, std::int64_t pid, std::size_t bytes) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    throw Error(system_error("open", path) +
                " (the ranks of a node open each other's segments through /proc: ranks in "
                "separate PID namespaces or under different users cannot; KODO_CHANNELS=ucx "
                "runs without them)");
  struct stat status{};
  const std::size_t length = kSegmentHeaderBytes + bytes;
  if (fstat(fd, &status) != 0) {
    const std::string what = system_error("fstat", path);
    close(fd);
    throw Error(what);
  }
  const std::string whose = "shared-memory segment " + path + " of rank " + std::to_string(owner);
  const int seals = fcntl(fd, F_GET_SEALS);
  if (!S_ISREG(status.st_mode) || seals < 0 || (seals & kSeals) != kSeals) {
    close(fd);
    throw Error(whose + " is not sealed against resizing (not a memory file kodo made)");
  }
  if (status.st_size < 0 || static_cast<std::size_t>(status.st_size) != length) {
    close(fd);
    throw Error(whose + " has " + std::to_string(status.st_size) + " bytes where " +
                std::to_string(length) + " were expected");
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) throw Error(system_error("mmap", path));
  SegmentHeader header{};
  std::memcpy(&header, base, sizeof header);
  std::string wrong;
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0)
    wrong = "is not a kodo segment (its magic differs)";
  else if (header.version != kSegmentVersion)
    wrong = "has format version " + std::to_string(header.version) + " where " +
            std::to_string(kSegmentVersion) + " was expected";
  else if (header.owner != static_cast<std::uint32_t>(owner))
    wrong = "names rank " + std::to_string(header.owner) + " as its owner";
  else if (header.bytes != bytes)
    wrong = "says it holds " + std::to_string(header.bytes) + " bytes where " +
            std::to_string(bytes) + " were expected";
  else if (header.pid != pid)
    wrong = "names process " + std::to_string(header.pid) + " where " + std::to_string(pid) +
            " was expected";
  if (!wrong.empty()) {
    munmap(base, length);
    throw Error(whose + " " + wrong);
  }
  return base;
}

NodeSegments::NodeSegments(MPI_Comm world, std::size_t bytes) : bytes_((bytes + 63) / 64 * 64) {
  int rank = 0;
  KODO_MPI_CHECK(MPI_Comm_rank(world, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  KODO_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int node_size = 0;
  KODO_MPI_CHECK(MPI_Comm_size(node, &node_size));

  // 1. Each rank's own segment.
  OwnSegment own{};
  std::string problem;
  try {
    own = create_segment(rank, bytes_);
  } catch (const Error& e) {
    problem = e.what();
  }
  try {
    agree_on_failure(world, problem, "could not create its shared-memory segment");
  } catch (...) {
    if (own.base) {
      munmap(own.base, kSegmentHeaderBytes + bytes_);
      close(own.fd);
    }
    MPI_Comm_free(&node);
    throw;
  }

  // 2. Who is on the node, their processes and the descriptors of their segments.
  struct Entry {
    std::int64_t rank, pid, fd;
  };
  const Entry entry{rank, getpid(), own.fd};
  std::vector<Entry> entries(static_cast<std::size_t>(node_size));
  KODO_MPI_CHECK(MPI_Allgather(&entry, sizeof entry, MPI_BYTE, entries.data(), sizeof entry,
                               MPI_BYTE, node));
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.rank < b.rank; });
  for (const Entry& e : entries) {
    node_ranks_.push_back(static_cast<int>(e.rank));
    pids_.push_back(e.pid);
    if (e.rank == rank) {
      mappings_.push_back({own.base, kSegmentHeaderBytes + bytes_});
      continue;
    }
    try {
      mappings_.push_back({map_segment(segment_path(e.pid, static_cast<int>(e.fd)),
                                       static_cast<int>(e.rank), e.pid, bytes_),
                           kSegmentHeaderBytes + bytes_});
    } catch (const Error& error) {
      if (problem.empty()) problem = error.what();
      mappings_.push_back({});
    }
  }

  // 3. Every rank of the node has mapped every segment (or failed): the descriptor can go,
  // and with it the only way to open the segment again.
  KODO_MPI_CHECK(MPI_Barrier(node));
  close(own.fd);
  try {
    agree_on_failure(world, problem, "could not map its node's shared-memory segments");
  } catch (...) {
    MPI_Comm_free(&node);
    for (const Mapping& m : mappings_)
      if (m.base) munmap(m.base, m.length);
    mappings_.clear();
    throw;
  }
  MPI_Comm_free(&node);
}

NodeSegments::~NodeSegments() {
  for (const Mapping& m : mappings_)
    if (m.base) munmap(m.base, m.length);
}

bool NodeSegments::on_node(int world_rank) const {
  return std::binary_search(node_ranks_.begin(), node_ranks_.end(), world_rank);
}

std::size_t NodeSegments::position(int world_rank) const {
  const auto it = std::lower_bound(node_ranks_.begin(), node_ranks_.end(), world_rank);
  if (it == node_ranks_.end() || *it != world_rank)
    throw Error("rank " + std::to_string(world_rank) +
                " shares no memory with this rank: it is not on this node");
  return static_cast<std::size_t>(it - node_ranks_.begin());
}

std::byte* NodeSegments::of(int world_rank) const {
  return static_cast<std::byte*>(mappings_[position(world_rank)].base) + kSegmentHeaderBytes;
}

std::int64_t NodeSegments::pid_of(int world_rank) const { return pids_[position(world_rank)]; }

}  // namespace kodo::detail
