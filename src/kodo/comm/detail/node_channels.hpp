// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What same-node channels share across a rank (issue 15): the node's shared-memory
// segments (node_segment.hpp), each registered so that this rank's streams can write
// it, space in this rank's own segment for the words and slots of the links it
// receives on, device allocations mapped from other ranks, and whether those ranks
// still run. node_route.cpp holds the protocol itself.
//
// Selection (KODO_CHANNELS): "auto" (the default) takes the same-node route for a
// receive ring whose peer rank shares this node, and UCX where it cannot (a notice says
// why, once per reason); "device" makes such a failure an error; "ucx" never takes it.

#include <kodo/backends/detail/native.hpp>
#include <kodo/comm/detail/node_segment.hpp>

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kodo::detail {

enum class ChannelSelection { automatic, ucx, device };
// "auto", "ucx" or "device"; throws kodo::Error naming KODO_CHANNELS for anything else.
ChannelSelection parse_channel_selection(std::string_view text);
const char* to_string(ChannelSelection selection);

// Whether process `pid` still runs: false once it has exited, reaped or not (a zombie
// still answers kill()).
bool process_alive(std::int64_t pid);

class NodeChannels {
 public:
  // Collective over `world`: maps the node's segments (`segment_bytes` each).
  // `streams_may_wait`: whether streams may wait on the device for transfers (not where
  // ranks share a GPU, which time-slices them: a waiting kernel would hold it).
  NodeChannels(MPI_Comm world, ChannelSelection selection, std::size_t segment_bytes,
               bool streams_may_wait);
  ~NodeChannels();
  NodeChannels(const NodeChannels&) = delete;
  NodeChannels& operator=(const NodeChannels&) = delete;

  ChannelSelection selection() const { return selection_; }
  std::size_t segment_bytes() const { return segments_.bytes(); }
  // Whether `rank` (another rank) shares this node.
  bool reaches(int rank) const { return rank != rank_ && segments_.on_node(rank); }

  // `bytes` of this rank's segment, 64-byte aligned, until released: the offset from the
  // segment's usable start, or nothing when the segment is full.
  std::optional<std::uint64_t> allocate(std::size_t bytes);
  // Gives back what allocate(bytes) returned at `offset`, once no rank touches it (a
  // closed link's words and slots, once both ends are closed everywhere).
  void release(std::uint64_t offset, std::size_t bytes);
  std::uint64_t bytes_in_use() const { return used_ - free_bytes_; }
  // `rank`'s segment at `offset`, as this rank's host and its streams address it.
  std::byte* host(int rank, std::uint64_t offset) const;
  std::byte* device(int rank, std::uint64_t offset) const;

  // The start here of a device allocation `rank` exported, mapped once for all its
  // users, and its size in `bytes`; nullptr and `why` on failure. Each successful call
  // is a user, until unimport().
  void* import(int rank, const std::array<std::byte, 64>& handle, std::size_t& bytes,
               std::string& why);
  // One user of an import is done with it; the last unmaps it.
  void unimport(int rank, const std::array<std::byte, 64>& handle);
  std::size_t imports() const { return imports_.size(); }
  // Unmaps every imported allocation: before their owners may free them (shutdown).
  void release_imports();

  // Whether `rank`'s process still runs (a zombie does not), and its id.
  bool alive(int rank) const;
  std::int64_t pid_of(int rank) const { return segments_.pid_of(rank); }

  // Prints `line` once per runtime (fallbacks to UCX, one line per reason).
  void notice(const std::string& line);

  // Waits on streams (backend::DeviceWait) are bounded by KODO_DEVICE_WAIT_SECONDS
  // (default 60); one that runs out stores its code into this rank's failure word (in
  // its segment, 0 until then), which the scheduler loop reads.
  std::uint64_t wait_timeout_ns() const { return wait_timeout_ns_; }
  bool streams_may_wait() const { return streams_may_wait_; }
  std::uint64_t* failure_word() const;         // as the host reads it
  std::uint64_t* failure_word_device() const;  // as the streams write it

 private:
  int rank_ = 0;
  ChannelSelection selection_;
  NodeSegments segments_;
  std::vector<std::byte*> device_;  // by rank position on the node: segments' device addresses
  std::uint64_t used_ = 0;          // of this rank's segment: below this, allocated or free
  std::map<std::uint64_t, std::uint64_t> free_;  // released ranges, by offset
  std::uint64_t free_bytes_ = 0;
  std::uint64_t failure_at_ = 0;  // the failure word's offset there
  std::uint64_t wait_timeout_ns_ = 0;
  bool streams_may_wait_ = true;
  struct Import {
    void* start;
    std::size_t bytes;
    std::size_t users = 0;
  };
  std::map<std::pair<int, std::array<std::byte, 64>>, Import> imports_;
  std::set<std::string> notices_;
};

}  // namespace kodo::detail
