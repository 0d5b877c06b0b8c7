// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Memory shared by the ranks of one node: each rank creates one memory file (memfd) and
// maps the segment of every other rank on its node. It is the ground of same-node
// channels (issue 15): 64-bit protocol words that streams and hosts write and read, and,
// on the host backend, the slots the data travels in.
//
// A segment has no name in any file system: peers open it through its owner's open
// descriptor (/proc/<pid>/fd/<n>, which the kernel grants only to processes that may
// inspect the owner), and the owner closes that descriptor once every rank of the node
// has mapped it, so no process can open it afterwards. It is sealed at its size
// (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL) before anyone sees it, so no process can
// truncate it under a peer's reads (a SIGBUS); a rank refuses a segment without those
// seals. A segment's first bytes say whose it is; a rank checks them in every segment it
// maps (magic, format version, size, owner rank, process id) and refuses a mismatch with
// an error naming the segment and the field. A peer that exits leaves its mapping valid.

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kodo::detail {

class NodeSegments {
 public:
  // Collective over `world`: every rank creates a segment of `bytes` usable bytes
  // (rounded up to 64; after the header), zeroed, and maps those of the ranks that share
  // its node. Throws kodo::Error on every rank of `world` if any rank fails.
  NodeSegments(MPI_Comm world, std::size_t bytes);
  ~NodeSegments();
  NodeSegments(const NodeSegments&) = delete;
  NodeSegments& operator=(const NodeSegments&) = delete;

  std::size_t bytes() const { return bytes_; }
  // Ranks of `world` on this node, in rank order (this rank included).
  const std::vector<int>& node_ranks() const { return node_ranks_; }
  bool on_node(int world_rank) const;
  // The usable bytes of `world_rank`'s segment as mapped here (this rank's own too),
  // aligned to 64 bytes; throws kodo::Error if that rank is not on this node.
  std::byte* of(int world_rank) const;
  // The process id of `world_rank` (on this node), as its segment's header gives it.
  std::int64_t pid_of(int world_rank) const;
  // Where `world_rank` stands in node_ranks(); throws kodo::Error if not on this node.
  std::size_t position(int world_rank) const;

 private:
  struct Mapping {
    void* base = nullptr;
    std::size_t length = 0;
  };
  std::size_t bytes_ = 0;
  std::vector<int> node_ranks_;
  std::vector<Mapping> mappings_;   // by position in node_ranks_
  std::vector<std::int64_t> pids_;  // by position in node_ranks_
};

// The header at the start of a segment (exposed for tests that forge one).
struct SegmentHeader {
  char magic[8];          // "kodoseg"
  std::uint32_t version;  // kSegmentVersion
  std::uint32_t owner;    // the owner's rank in the world communicator
  std::uint64_t bytes;    // usable bytes after the header
  std::int64_t pid;       // the owner's process id
};
inline constexpr std::uint32_t kSegmentVersion = 1;
inline constexpr std::size_t kSegmentHeaderBytes = 64;  // the header, padded
static_assert(sizeof(SegmentHeader) <= kSegmentHeaderBytes);

// A rank's own segment as created: its open descriptor and its mapping (of
// kSegmentHeaderBytes + bytes), header written, sealed at that size.
struct OwnSegment {
  int fd = -1;
  void* base = nullptr;
};
OwnSegment create_segment(int owner, std::size_t bytes);
// Where a peer opens the segment that process `pid` holds open as descriptor `fd`.
std::string segment_path(std::int64_t pid, int fd);
// Maps the segment at `path`, which rank `owner` (process `pid`) created with `bytes`
// usable bytes, checking its seals, size and header; throws kodo::Error naming the
// segment and what does not match. Returns the mapping's base; its length is
// kSegmentHeaderBytes + bytes. (The constructor's way of opening a peer's segment.)
void* map_segment(const std::string& path, int owner, std::int64_t pid, std::size_t bytes);

}  // namespace kodo::detail
