// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Restoring one unit from its file: the fields streamed and checked as its state()
// reads them (FileSource), the file's checksum compared at the end.
#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/tasking/detail/checkpoint_files.hpp>

#include <sys/stat.h>

namespace kodo::detail {
namespace {

// The fields of one unit file, checked as they are read (RecordSource): streamed, with
// the file's checksum taken on the way and compared at the end (finish()), so a unit's
// state is never held whole on the host.
class FileSource final : public RecordSource {
 public:
  FileSource(const std::string& path, std::uint64_t size, Runtime& runtime)
      : RecordSource("checkpoint file " + path, size, runtime),
        path_(path),
        size_(size),
        fd_(open_checked(path, size)) {}
  ~FileSource() { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  // The rest of the file through the checksum; throws when it differs from `expected`.
  void finish(std::uint64_t expected) {
    std::byte scrap[4096];
    while (!at_end()) bytes(scrap, std::min<std::uint64_t>(sizeof scrap, left()), "its end");
    if (checksum_.value() != expected)
      throw Error(cat("checkpoint file ", path_,
                      " does not match its checksum in the manifest: the file is corrupted"));
  }

 private:
  // n bytes of the file, through a buffer for the small ones, and the checksum.
  void raw(void* into, std::uint64_t n) override {
    auto* p = static_cast<std::byte*>(into);
    while (n > 0) {
      std::uint64_t k = 0;
      if (held_at_ < held_end_) {
        k = std::min<std::uint64_t>(n, held_end_ - held_at_);
        std::memcpy(p, held_.data() + held_at_, k);
        held_at_ += k;
      } else if (n >= held_.size()) {
        k = fill(p, n);
      } else {
        held_end_ = fill(held_.data(), std::min<std::uint64_t>(held_.size(), size_ - file_at_));
        held_at_ = 0;
        continue;
      }
      checksum_.update(p, k);
      p += k, n -= k;
    }
  }
  // Up to n bytes from the file into `into` (at least one); the file has them.
  std::uint64_t fill(std::byte* into, std::uint64_t n) {
    for (;;) {
      const ssize_t r = ::read(fd_, into, std::min<std::uint64_t>(n, std::uint64_t{1} << 30));
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) throw Error(system_error("cannot read checkpoint file", path_));
      file_at_ += static_cast<std::uint64_t>(r);
      return static_cast<std::uint64_t>(r);
    }
  }

  std::string path_;
  std::uint64_t size_;
  int fd_ = -1;
  std::uint64_t file_at_ = 0;  // bytes read from the file
  std::array<std::byte, 65536> held_{};
  std::uint64_t held_at_ = 0, held_end_ = 0;
  Checksum checksum_;
};

}  // namespace

void read_unit(Runtime& runtime, const std::string& path, const SavedCollectionRecord& collection,
               std::int64_t linear, const std::function<void(StateReader&)>& visit) {
  static const std::string region = "kodo::checkpoint restore";
  const ToolRegion here(region);
  const SavedUnit& unit = collection.units.at(static_cast<std::size_t>(linear));
  const std::string name = unit_file(path, collection.id, linear);
  FileSource source(name, unit.bytes, runtime);
  try {
    char magic[sizeof kUnitMagic];
    source.bytes(magic, sizeof magic, "its header");
    const auto format = source.take<std::uint32_t>("its header");
    const auto saved_collection = source.take<std::uint32_t>("its header");
    const auto saved_linear = source.take<std::int64_t>("its header");
    if (std::memcmp(magic, kUnitMagic, sizeof magic) != 0 || format != kFormat ||
        saved_collection != collection.id || saved_linear != linear)
      throw Error(cat("checkpoint file ", name, " is not the state of unit ", linear,
                      " of collection ", collection.id, " in format ", kFormat));
    StateReader reader(source);
    visit(reader);
    if (!source.at_end())
      throw Error(cat("checkpoint file ", name,
                      " holds more fields than the unit's state() reads"));
  } catch (const Error&) {
    // A corrupted file is named as such, whatever field check it tripped first.
    source.finish(unit.checksum);
    throw;
  }
  source.finish(unit.checksum);
}

}  // namespace kodo::detail
