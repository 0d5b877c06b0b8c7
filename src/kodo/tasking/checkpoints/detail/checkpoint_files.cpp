// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/checkpoints/detail/checkpoint_files.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>

#include <cstdio>
#include <sys/stat.h>

namespace kodo::detail {

std::string system_error(const std::string& what, const std::string& path) {
  return cat(what, " ", path, ": ", std::strerror(errno));
}

namespace {

// Opens `path` for reading, refusing a link and anything but a regular file; `size` is
// the file's size. `what` names the file in errors.
int open_regular(const std::string& path, const std::string& what, std::uint64_t* size) {
  // Non-blocking: a FIFO in its place must not hold the rank.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) throw Error(cat(what, " ", path, " is missing"));
    if (errno == ELOOP)
      throw Error(cat(what, " ", path,
                      " is a symbolic link; kodo follows no link inside a checkpoint directory"));
    throw Error(system_error(cat("cannot open ", what), path));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(cat(what, " ", path, " is not a readable regular file"));
  }
  // A regular file: reads block as usual from here (a file system that answered EAGAIN
  // to a non-blocking read would otherwise keep this rank spinning while its peers wait).
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const std::string problem = system_error(cat("cannot prepare ", what), path);
    ::close(fd);
    throw Error(problem);
  }
  *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

}  // namespace

CheckpointReader::~CheckpointReader() {
  if (fd_ >= 0) ::close(fd_);
}

int CheckpointReader::open(std::uint32_t rank, std::string* name) {
  *name = rank_file(path_, rank);
  if (open_rank_ == static_cast<std::int64_t>(rank)) return fd_;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1, open_rank_ = -1;
  // The manifest's check gave every unit a listed file; checked again, cheaply.
  const auto listed = files_.find(rank);
  if (listed == files_.end())
    throw Error(cat("checkpoint ", path_, " lists no file of rank ", rank));
  const std::uint64_t expected = listed->second.bytes;
  std::uint64_t size = 0;
  const int fd = open_regular(*name, "checkpoint file", &size);
  if (size != expected) {
    ::close(fd);
    throw Error(cat("checkpoint file ", *name, " holds ", size, " bytes where its manifest says ",
                    expected, size < expected ? " (truncated)" : ""));
  }
  fd_ = fd, open_rank_ = rank;
  return fd_;
}

std::vector<std::byte> read_small_file(const std::string& path, std::uint64_t limit,
                                       const std::string& what) {
  std::uint64_t size = 0;
  const int fd = open_regular(path, what, &size);
  if (size > limit) {
    ::close(fd);
    throw Error(cat(what, " ", path, " holds ", size, " bytes, more than the ", limit,
                    " it may have"));
  }
  std::vector<std::byte> data;
  try {
    data.resize(size);
  } catch (...) {
    ::close(fd);
    throw;
  }
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t r = ::read(fd, data.data() + done, size - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const std::string problem = r == 0 ? cat(what, " ", path, " ended early (it shrank)")
                                         : system_error(cat("cannot read ", what), path);
      ::close(fd);
      throw Error(problem);
    }
    done += static_cast<std::uint64_t>(r);
  }
  ::close(fd);
  return data;
}

void require_real_directory(const std::string& path, const std::string& what) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw Error(cat(what, " ", path, " is missing"));
    throw Error(system_error(cat("cannot examine ", what), path));
  }
  if (S_ISLNK(st.st_mode))
    throw Error(cat(what, " ", path,
                    " is a symbolic link; kodo follows no link inside a checkpoint directory"));
  if (!S_ISDIR(st.st_mode)) throw Error(cat(what, " ", path, " is not a directory"));
}

void sync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(system_error("cannot open directory", path));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw Error(system_error("cannot flush directory", path));
}

void rename_durably(const std::string& from, const std::string& to, const std::string& dir) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw Error(system_error(cat("cannot rename ", from, " to"), to));
  sync_directory(dir);
}

std::int64_t checkpoint_number(const std::string& name, bool* partial) {
  constexpr std::string_view prefix = "checkpoint-", suffix = ".partial";
  if (!name.starts_with(prefix)) return -1;
  std::string_view digits = std::string_view(name).substr(prefix.size());
  *partial = digits.ends_with(suffix);
  if (*partial) digits.remove_suffix(suffix.size());
  const auto n = parse_whole<std::int64_t>(digits);
  return n && *n >= 0 && *n <= (std::int64_t{1} << 62) ? *n : -1;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n\v\f");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n\v\f") - first + 1);
}

std::string rank_file_name(std::int64_t rank) { return cat("rank-", rank, ".state"); }

std::string rank_file(const std::string& checkpoint, std::int64_t rank) {
  return cat(checkpoint, "/", rank_file_name(rank));
}

std::string xxh3_text(std::uint64_t checksum) {
  char text[5 + 16 + 1];
  std::snprintf(text, sizeof text, "XXH3_%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

std::optional<std::uint64_t> parse_xxh3(std::string_view text) {
  constexpr std::string_view prefix = "XXH3_";
  if (!text.starts_with(prefix) || text.size() != prefix.size() + 16) return std::nullopt;
  text.remove_prefix(prefix.size());
  // Hexadecimal digits only (from_chars alone would take a sign).
  if (text.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
    return std::nullopt;
  return parse_whole<std::uint64_t>(text, 16);
}

void require_main_program(Runtime& runtime, const char* call) {
  if (RuntimeAccess::running(runtime))
    throw Error(cat(call,
                    " is collective: the main program of every rank calls it between "
                    "run() calls, never an entry method"));
}

void agree_on_restore(Runtime& runtime, const std::string& problem) {
  const WatchdogPhase watching(RuntimeAccess::watchdog(runtime),
                               "restoring units from a checkpoint (kodo::Checkpoint::restore)");
  agree_and_report(runtime.comm(), problem);
}

std::uint64_t checkpoint_checksum(const void* data, std::uint64_t bytes) {
  return XXH3_64bits(data, static_cast<std::size_t>(bytes));
}

}  // namespace kodo::detail
