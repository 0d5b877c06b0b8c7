// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A checkpoint's files: unit files written in full or not at all (OutputFile) with their
// checksum (Checksum), read back checked (open_checked, read_small_file), the directory made
// durable (sync_directory, rename_durably), the names of checkpoints and unit files, and
// the records of a unit's state in state_records.hpp. Internal to the
// checkpoint sources (not installed).

#include <kodo/tasking/checkpoint.hpp>
#include <kodo/tasking/detail/state_records.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace kodo::detail {

inline constexpr int kFormat = 1;
inline constexpr char kUnitMagic[8] = {'k', 'o', 'd', 'o', 'u', 'n', 'i', 't'};
inline constexpr std::uint64_t kManifestLimit = std::uint64_t{1} << 30;
// In every checkpoint directory this code makes: only those are ever removed.
inline constexpr const char* kMarker = "/kodo-checkpoint";

// "what path: the reason errno gives".
std::string system_error(const std::string& what, const std::string& path);

// A 64-bit checksum of a byte stream, four lanes of multiply-rotate rounds over 32-byte
// blocks (fast enough to keep up with a disk), then the tail and a final mix.
class Checksum {
 public:
  void update(const void* data, std::uint64_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    total_ += n;
    if (held_ > 0) {
      const std::uint64_t take = std::min<std::uint64_t>(n, 32 - held_);
      std::memcpy(block_ + held_, p, take);
      held_ += take, p += take, n -= take;
      if (held_ < 32) return;
      round(block_);
      held_ = 0;
    }
    for (; n >= 32; p += 32, n -= 32) round(p);
    std::memcpy(block_, p, n);
    held_ = n;
  }
  std::uint64_t value() const {
    std::uint64_t h = total_ * kB;
    for (int l = 0; l < 4; ++l) h = (h ^ std::rotl(lane_[l] * kA, 29)) * kB + l;
    for (std::uint64_t i = 0; i < held_; ++i) h = std::rotl((h ^ block_[i]) * kA, 23);
    h ^= h >> 33;
    h *= kB;
    h ^= h >> 29;
    return h;
  }

 private:
  static constexpr std::uint64_t kA = 0x9E3779B185EBCA87ULL, kB = 0xC2B2AE3D27D4EB4FULL;
  void round(const unsigned char* p) {
    for (int l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + 8 * l, 8);
      lane_[l] = std::rotl(lane_[l] + w * kB, 31) * kA;
    }
  }
  std::uint64_t lane_[4] = {kA, kB, ~kA, ~kB};
  unsigned char block_[32] = {};
  std::uint64_t held_ = 0, total_ = 0;
};

class OutputFile final : public RecordOutput {
 public:
  // Created anew, never through a link: a file or link already at `path` is an error,
  // so a link planted in a checkpoint directory cannot redirect a write.
  explicit OutputFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == EEXIST)
      throw Error(cat("cannot create ", path_,
                      ": something is already there (kodo creates every checkpoint file anew "
                      "and follows no link)"));
    if (fd_ < 0) throw Error(system_error("cannot create", path_));
  }
  ~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(const void* data, std::uint64_t n) override {
    checksum_.update(data, n);
    bytes_ += n;
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min<std::uint64_t>(n, std::uint64_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw Error(system_error("cannot write", path_));
      p += w, n -= static_cast<std::uint64_t>(w);
    }
  }
  void close() {
    if (::fsync(fd_) != 0) throw Error(system_error("cannot flush", path_));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error(system_error("cannot close", path_));
  }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t checksum() const { return checksum_.value(); }

 private:
  std::string path_;
  int fd_ = -1;
  Checksum checksum_;
  std::uint64_t bytes_ = 0;
};

// A checkpoint file opened for reading (never through a link), checked to be a regular
// file of `expected_bytes`.
int open_checked(const std::string& path, std::uint64_t expected_bytes);
// The whole of a regular file (never through a link) of at most `limit` bytes; its size is
// checked before anything is allocated. `what` names the file in errors.
std::vector<std::byte> read_small_file(const std::string& path, std::uint64_t limit,
                                       const std::string& what);
// Throws unless `path` is a directory itself, not a link to one.
void require_real_directory(const std::string& path, const std::string& what);
void sync_directory(const std::string& path);
// Renames `from` to `to` and makes the change durable in `dir`.
void rename_durably(const std::string& from, const std::string& to, const std::string& dir);

// The number that is the whole of `text` (nothing before or after it), if it is one.
template <class T>
std::optional<T> parse_whole(std::string_view text, int base = 10) {
  T v{};
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// N of a directory entry named checkpoint-N or checkpoint-N.partial, else -1.
std::int64_t checkpoint_number(const std::string& name, bool* partial);
// `s` without white space at either end (the manifest keeps a value's inner text only).
std::string trimmed(const std::string& s);
// The file of unit `linear` of `collection` in the checkpoint directory `checkpoint`.
std::string unit_file(const std::string& checkpoint, std::uint32_t collection, std::int64_t linear);

}  // namespace kodo::detail
