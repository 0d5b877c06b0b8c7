// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Restoring one unit from its rank's file: its bytes checked against the unit's checksum
// first (verify_unit), then the fields streamed and checked as its state() reads them
// (FileSource), the checksum taken again on the way and compared at the end.
#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/tasking/checkpoints/detail/checkpoint_files.hpp>

#include <sys/stat.h>
#include <vector>

namespace kodo::detail {
namespace {

// The fields of one unit, bytes [offset, offset + size) of its rank's file (already
// checked to hold them), checked as they are read (RecordSource): streamed, with the
// unit's checksum taken on the way and compared at the end (finish()), so a unit's state
// is never held whole on the host.
class FileSource final : public RecordSource {
 public:
  FileSource(int fd, const std::string& origin, std::uint64_t offset, std::uint64_t size,
             Runtime& runtime)
      : RecordSource(origin, size, runtime),
        origin_(origin),
        fd_(fd),
        offset_(offset),
        size_(size) {}

  // The rest of the unit through the checksum; throws when it differs from `expected`.
  void finish(std::uint64_t expected) {
    std::byte scrap[4096];
    while (!at_end()) bytes(scrap, std::min<std::uint64_t>(sizeof scrap, left()), "its end");
    if (checksum_.value() != expected)
      throw Error(cat(origin_, " does not match its checksum in the manifest (",
                      xxh3_text(expected), ", not ", xxh3_text(checksum_.value()),
                      "): the file is corrupted"));
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
  // Up to n bytes of the unit into `into` (at least one); the file has them.
  std::uint64_t fill(std::byte* into, std::uint64_t n) {
    for (;;) {
      const ssize_t r = ::pread(fd_, into, std::min<std::uint64_t>(n, std::uint64_t{1} << 30),
                                static_cast<off_t>(offset_ + file_at_));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw Error(cat("cannot read ", origin_, ": ", std::strerror(errno)));
      if (r == 0) throw Error(cat(origin_, " ended early (its file shrank)"));
      file_at_ += static_cast<std::uint64_t>(r);
      return static_cast<std::uint64_t>(r);
    }
  }

  std::string origin_;
  int fd_;
  std::uint64_t offset_, size_;
  std::uint64_t file_at_ = 0;  // bytes of the unit read from the file
  std::array<std::byte, 65536> held_{};
  std::uint64_t held_at_ = 0, held_end_ = 0;
  Xxh3 checksum_;
};

// Bytes [offset, offset + size) of `fd` against `expected`, before the unit's state()
// reads any: a unit's fields may size what it allocates (a view's extents), and a file
// that is not kodo's (a sparse one, its manifest re-checksummed) must not make a rank
// allocate what its bytes claim before the checksum refuses them. One more read of the
// unit (from the page cache, as the second comes).
void verify_unit(int fd, const std::string& origin, std::uint64_t offset, std::uint64_t size,
                 std::uint64_t expected) {
  std::vector<std::byte> chunk(std::min<std::uint64_t>(size, std::uint64_t{1} << 20));
  Xxh3 checksum;
  for (std::uint64_t at = 0; at < size;) {
    const ssize_t r = ::pread(fd, chunk.data(), std::min<std::uint64_t>(chunk.size(), size - at),
                              static_cast<off_t>(offset + at));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error(cat("cannot read ", origin, ": ", std::strerror(errno)));
    if (r == 0) throw Error(cat(origin, " ended early (its file shrank)"));
    checksum.update(chunk.data(), static_cast<std::uint64_t>(r));
    at += static_cast<std::uint64_t>(r);
  }
  if (checksum.value() != expected)
    throw Error(cat(origin, " does not match its checksum in the manifest (", xxh3_text(expected),
                    ", not ", xxh3_text(checksum.value()), "): the file is corrupted"));
}

}  // namespace

void read_unit(CheckpointReader& files, const SavedCollectionRecord& collection,
               std::int64_t linear, const std::function<void(StateReader&)>& visit) {
  static const std::string region = "kodo::checkpoint restore";
  const ToolRegion here(region);
  const SavedUnit& unit = collection.units.at(static_cast<std::size_t>(linear));
  const std::lock_guard<std::mutex> hold(files.lock());
  std::string file;
  const int fd = files.open(unit.file, &file);
  const std::string name = cat("checkpoint file ", file, ", unit ", linear, " of collection ",
                               collection.id, " (bytes ", unit.offset, " to ",
                               unit.offset + unit.bytes, ")");
  verify_unit(fd, name, unit.offset, unit.bytes, unit.checksum);
  FileSource source(fd, name, unit.offset, unit.bytes, files.runtime());
  try {
    char magic[sizeof kUnitMagic];
    source.bytes(magic, sizeof magic, "its header");
    const auto format = source.take<std::uint32_t>("its header");
    const auto saved_collection = source.take<std::uint32_t>("its header");
    const auto saved_linear = source.take<std::int64_t>("its header");
    if (std::memcmp(magic, kUnitMagic, sizeof magic) != 0 || format != kFormat ||
        saved_collection != collection.id || saved_linear != linear)
      throw Error(cat(name, " is not the state of unit ", linear, " of collection ", collection.id,
                      " in format ", kFormat));
    StateReader reader(source);
    visit(reader);
    if (!source.at_end())
      throw Error(cat(name, " holds more fields than the unit's state() reads"));
  } catch (const Error&) {
    // A corrupted file is named as such, whatever field check it tripped first.
    source.finish(unit.checksum);
    throw;
  }
  source.finish(unit.checksum);
}

}  // namespace kodo::detail
