#include <kodo/tasking/detail/checkpoint_files.hpp>

#include <kodo/tasking/detail/scheduler.hpp>

#include <sys/stat.h>

namespace kodo::detail {

std::string system_error(const std::string& what, const std::string& path) {
  return cat(what, " ", path, ": ", std::strerror(errno));
}

int open_checked(const std::string& path, std::uint64_t expected_bytes) {
  // Non-blocking: a FIFO in its place must not hold the rank.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) throw Error(cat("checkpoint file ", path, " is missing"));
    throw Error(system_error("cannot open checkpoint file", path));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(cat("checkpoint file ", path, " is not a readable regular file"));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size != expected_bytes) {
    ::close(fd);
    throw Error(cat("checkpoint file ", path, " holds ", size, " bytes where its manifest says ",
                    expected_bytes, size < expected_bytes ? " (truncated)" : ""));
  }
  return fd;
}

std::vector<std::byte> read_file(const std::string& path, std::uint64_t size) {
  const int fd = open_checked(path, size);
  std::vector<std::byte> data(size);
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t r = ::read(fd, data.data() + done, size - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ::close(fd);
      throw Error(system_error("cannot read checkpoint file", path));
    }
    done += static_cast<std::uint64_t>(r);
  }
  ::close(fd);
  return data;
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

std::string unit_file(const std::string& checkpoint, std::uint32_t collection,
                      std::int64_t linear) {
  return cat(checkpoint, "/c", collection, "-u", linear, ".state");
}

void require_main_program(Runtime& runtime, const char* call) {
  if (RuntimeAccess::running(runtime))
    throw Error(cat(call,
                    " is collective: the main program of every rank calls it between "
                    "run() calls, never an entry method"));
}

std::uint64_t checkpoint_checksum(const void* data, std::uint64_t bytes) {
  Checksum c;
  c.update(data, bytes);
  return c.value();
}

}  // namespace kodo::detail
