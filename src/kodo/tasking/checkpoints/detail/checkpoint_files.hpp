// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A checkpoint's files: a rank's file of its units written in full or not at all
// (OutputFile, UnitOutput) with their XXH3 checksums (Xxh3), read back checked
// (CheckpointReader, read_small_file), the directory made durable (sync_directory,
// rename_durably), the names of checkpoints and rank files, and the records of a unit's
// state in state_records.hpp. Internal to the
// checkpoint sources (not installed).

#include <kodo/tasking/checkpoints/checkpoint.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <xxhash.h>
#if XXH_VERSION_NUMBER < 800
#error "kodo needs xxHash 0.8.0 or later: XXH3 is stable (and what xxhsum -H3 prints) from 0.8.0 on"
#endif

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace kodo::detail {

// 2: a file per rank (rank-R.state) and XXH3 checksums; 1: a file per unit and kodo's
// own checksum (refused, with what to do).
inline constexpr int kFormat = 2;
inline constexpr char kUnitMagic[8] = {'k', 'o', 'd', 'o', 'u', 'n', 'i', 't'};
inline constexpr std::uint64_t kManifestLimit = std::uint64_t{1} << 30;
// In every checkpoint directory this code makes: only those are ever removed.
inline constexpr const char* kMarker = "/kodo-checkpoint";

// "what path: the reason errno gives".
std::string system_error(const std::string& what, const std::string& path);

// XXH3-64 (xxHash's XXH3_64bits, seed 0) of a byte stream: what `xxhsum -H3` prints for
// the same bytes, so a stock tool verifies every checksum a checkpoint records.
class Xxh3 {
 public:
  Xxh3() : state_(XXH3_createState()) {
    if (!state_) throw std::bad_alloc();
    reset();
  }
  void reset() { XXH3_64bits_reset(state_.get()); }
  void update(const void* data, std::uint64_t n) {
    XXH3_64bits_update(state_.get(), data, static_cast<std::size_t>(n));
  }
  std::uint64_t value() const { return XXH3_64bits_digest(state_.get()); }

 private:
  struct Free {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, Free> state_;
};

// A checksum as a checkpoint writes it: xxhsum's form, "XXH3_" and 16 hexadecimal digits.
std::string xxh3_text(std::uint64_t checksum);
// The checksum `text` names in that form, if it is one.
std::optional<std::uint64_t> parse_xxh3(std::string_view text);

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
  Xxh3 checksum_;
  std::uint64_t bytes_ = 0;
};

// One unit's bytes, written into its rank's file and checksummed apart from the rest.
class UnitOutput final : public RecordOutput {
 public:
  UnitOutput(OutputFile& file, Xxh3& checksum) : file_(file), checksum_(checksum) {
    checksum_.reset();
  }
  void write(const void* data, std::uint64_t n) override {
    checksum_.update(data, n);
    file_.write(data, n);
    bytes_ += n;
  }
  std::uint64_t bytes() const { return bytes_; }

 private:
  OutputFile& file_;
  Xxh3& checksum_;
  std::uint64_t bytes_ = 0;
};

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
// The file of the units written by `rank` in the checkpoint directory `checkpoint`
// (rank-R.state), and its name alone.
std::string rank_file_name(std::int64_t rank);
std::string rank_file(const std::string& checkpoint, std::int64_t rank);

// The checked manifest's files, by the rank that wrote them, and the one open for reading
// (a rank's units mostly lie in one file, or a few): what SavedCollection::read reads
// through (checkpoint_read.cpp).
struct SavedFile {
  std::uint64_t bytes = 0, checksum = 0;
};
class CheckpointReader {
 public:
  CheckpointReader(Runtime& runtime, std::string path, std::map<std::uint32_t, SavedFile> files)
      : runtime_(runtime), path_(std::move(path)), files_(std::move(files)) {}
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;
  Runtime& runtime() { return runtime_; }
  const std::string& path() const { return path_; }
  // The descriptor of rank `rank`'s file, opened (never through a link) and checked to
  // hold the bytes the manifest says before anything is read; `*name` is its path.
  int open(std::uint32_t rank, std::string* name);
  std::mutex& lock() { return lock_; }

 private:
  Runtime& runtime_;
  std::string path_;
  std::map<std::uint32_t, SavedFile> files_;
  std::mutex lock_;
  std::int64_t open_rank_ = -1;
  int fd_ = -1;
};

}  // namespace kodo::detail
