// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/comm/detail/node_channels.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/settings.hpp>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <sys/types.h>

namespace kodo::detail {
namespace {

int rank_of(MPI_Comm comm) {
  int rank = 0;
  KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  return rank;
}

}  // namespace

ChannelSelection parse_channel_selection(std::string_view text) {
  if (text.empty() || text == "auto") return ChannelSelection::automatic;
  if (text == "ucx") return ChannelSelection::ucx;
  if (text == "device") return ChannelSelection::device;
  throw Error("KODO_CHANNELS is '" + std::string(text) + "'; expected auto, ucx or device");
}

const char* to_string(ChannelSelection selection) {
  switch (selection) {
    case ChannelSelection::automatic: return "auto";
    case ChannelSelection::ucx: return "ucx";
    case ChannelSelection::device: return "device";
  }
  return "?";
}

NodeChannels::NodeChannels(MPI_Comm world, ChannelSelection selection, std::size_t segment_bytes,
                           bool streams_may_wait)
    : rank_(rank_of(world)),
      selection_(selection),
      segments_(world, segment_bytes),
      streams_may_wait_(streams_may_wait) {
  std::string problem;
  try {
    wait_timeout_ns_ =
        static_cast<std::uint64_t>(seconds_setting("KODO_DEVICE_WAIT_SECONDS").value_or(60.0) *
                                   1e9);
  } catch (const Error& e) {
    problem = e.what();
  }
  failure_at_ = *allocate(8);  // a segment has at least 4096 bytes
  *failure_word() = 0;
  for (const int r : segments_.node_ranks()) {
    try {
      device_.push_back(static_cast<std::byte*>(backend::register_shared_host(
                            segments_.of(r) - kSegmentHeaderBytes,
                            kSegmentHeaderBytes + segments_.bytes())) +
                        kSegmentHeaderBytes);
    } catch (const Error& e) {
      if (problem.empty()) problem = e.what();
      device_.push_back(nullptr);
    }
  }
  try {
    agree_on_failure(world, problem, "could not register its node's shared-memory segments");
  } catch (...) {
    for (std::size_t i = 0; i < device_.size(); ++i)
      if (device_[i])
        backend::unregister_shared_host(segments_.of(segments_.node_ranks()[i]) -
                                        kSegmentHeaderBytes);
    throw;
  }
}

NodeChannels::~NodeChannels() {
  release_imports();
  for (std::size_t i = 0; i < device_.size(); ++i)
    if (device_[i])
      backend::unregister_shared_host(segments_.of(segments_.node_ranks()[i]) -
                                      kSegmentHeaderBytes);
}

std::optional<std::uint64_t> NodeChannels::allocate(std::size_t bytes) {
  const std::uint64_t rounded = (std::uint64_t{bytes} + 63) / 64 * 64;
  // The first released range that holds it, else the end of what was ever used.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < rounded) continue;
    const std::uint64_t at = it->first, left = it->second - rounded;
    free_.erase(it);
    if (left > 0) free_.emplace(at + rounded, left);
    free_bytes_ -= rounded;
    return at;
  }
  if (rounded > segments_.bytes() - used_) return std::nullopt;
  const std::uint64_t at = used_;
  used_ += rounded;
  return at;
}

void NodeChannels::release(std::uint64_t offset, std::size_t bytes) {
  const std::uint64_t rounded = (std::uint64_t{bytes} + 63) / 64 * 64;
  if (rounded == 0) return;
  free_bytes_ += rounded;
  auto it = free_.emplace(offset, rounded).first;
  // Joined with its neighbours, so that later, larger rings fit.
  if (const auto next = std::next(it);
      next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    const auto before = std::prev(it);
    if (before->first + before->second == it->first) {
      before->second += it->second;
      free_.erase(it);
    }
  }
}

std::byte* NodeChannels::host(int rank, std::uint64_t offset) const {
  return segments_.of(rank) + offset;
}

std::byte* NodeChannels::device(int rank, std::uint64_t offset) const {
  return device_[segments_.position(rank)] + offset;
}

void* NodeChannels::import(int rank, const std::array<std::byte, 64>& handle, std::size_t& bytes,
                           std::string& why) {
  const auto key = std::make_pair(rank, handle);
  if (const auto it = imports_.find(key); it != imports_.end()) {
    bytes = it->second.bytes;
    ++it->second.users;
    return it->second.start;
  }
  void* start = backend::import_memory(handle, bytes, why);
  if (start) imports_.emplace(key, Import{start, bytes, 1});
  return start;
}

void NodeChannels::unimport(int rank, const std::array<std::byte, 64>& handle) {
  const auto it = imports_.find(std::make_pair(rank, handle));
  if (it == imports_.end() || --it->second.users > 0) return;
  backend::release_import(it->second.start);
  imports_.erase(it);
}

void NodeChannels::release_imports() {
  for (const auto& [key, mapped] : imports_) backend::release_import(mapped.start);
  imports_.clear();
}

std::uint64_t* NodeChannels::failure_word() const {
  return reinterpret_cast<std::uint64_t*>(host(rank_, failure_at_));
}

std::uint64_t* NodeChannels::failure_word_device() const {
  return reinterpret_cast<std::uint64_t*>(device(rank_, failure_at_));
}

bool process_alive(std::int64_t id) {
  const auto pid = static_cast<pid_t>(id);
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no /proc: kill() said it exists
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

bool NodeChannels::alive(int rank) const { return process_alive(segments_.pid_of(rank)); }

void NodeChannels::notice(const std::string& line) {
  if (notices_.insert(line).second) print_error(detail::cat("kodo: rank ", rank_, ": ", line));
}

}  // namespace kodo::detail
