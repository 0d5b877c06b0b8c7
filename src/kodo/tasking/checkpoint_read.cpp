// Restoring one unit from its file: the fields streamed and checked as its state()
// reads them (FileSource), the file's checksum compared at the end.
#include <kodo/tasking/detail/checkpoint_files.hpp>

#include <sys/stat.h>

namespace kodo::detail {
namespace {

// The fields of one unit file, checked as they are read: streamed, with the file's
// checksum taken on the way and compared at the end (finish()), so a unit's state is
// never held whole on the host; device fields go through pinned chunks.
class FileSource final : public StateSource {
 public:
  FileSource(const std::string& path, std::uint64_t size, Runtime& runtime)
      : path_(path),
        size_(size),
        fd_(open_checked(path, size)),
        runtime_(runtime),
        space_(runtime.streams().communication(0).space()) {}
  ~FileSource() { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  template <class T>
  T take(const char* what) {
    T v;
    bytes(&v, sizeof v, what);
    return v;
  }
  void bytes(void* into, std::uint64_t n, const char* what) {
    if (n > size_ - at_) throw Error(cat("checkpoint file ", path_, " ends inside ", what));
    raw(into, n);
  }
  // The rest of the file through the checksum; throws when it differs from `expected`.
  void finish(std::uint64_t expected) {
    std::byte scrap[4096];
    while (at_ < size_) raw(scrap, std::min<std::uint64_t>(sizeof scrap, size_ - at_));
    if (checksum_.value() != expected)
      throw Error(cat("checkpoint file ", path_,
                      " does not match its checksum in the manifest: the file is corrupted"));
  }
  bool at_end() const { return at_ == size_; }

  FieldShape next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                  std::uint32_t rank) override {
    ++field_;
    if (at_end())
      throw Error(cat("checkpoint file ", path_, " holds ", field_ - 1,
                      " fields; the unit's state() reads more (field '", name, "')"));
    const auto length = take<std::uint32_t>("a field name");
    if (length > kNameLimit || length > size_ - at_)
      throw Error(cat("checkpoint file ", path_, ": field ", field_, " has a malformed name"));
    std::string saved(length, '\0');
    bytes(saved.data(), length, "a field name");
    FieldShape s;
    s.kind = static_cast<FieldKind>(take<std::uint8_t>("a field"));
    s.element_size = take<std::uint32_t>("a field");
    s.rank = take<std::uint32_t>("a field");
    if (s.rank > 8)
      throw Error(cat("checkpoint file ", path_, ": field '", saved, "' has rank ", s.rank));
    std::optional<std::uint64_t> bytes = s.element_size == 0 || s.element_size > (1u << 20)
                                             ? std::nullopt
                                             : std::optional(std::uint64_t{s.element_size});
    for (std::uint32_t d = 0; d < s.rank; ++d) {
      s.extents[d] = take<std::int64_t>("a field's extents");
      if (s.extents[d] < 0 || s.extents[d] > kExtentLimit) bytes = std::nullopt;
      if (bytes) bytes = checked_mul(*bytes, static_cast<std::uint64_t>(s.extents[d]));
    }
    s.bytes = take<std::uint64_t>("a field");
    if (!bytes || s.bytes != *bytes || s.bytes > size_ - at_)
      throw Error(cat("checkpoint file ", path_, ": field '", saved,
                      "' has a malformed size or extends past the end of the file"));
    if (saved != name || s.kind != kind || s.element_size != element_size || s.rank != rank)
      throw Error(cat("checkpoint file ", path_, ": field ", field_, " is '", saved, "' (",
                      describe(s.kind, s.element_size, s.rank), "); the unit's state() reads '",
                      name, "' (", describe(kind, element_size, rank), ") there"));
    pending_ = s.bytes;
    return s;
  }

  void read(void* data, std::uint64_t n, bool on_device) override {
    if (n != pending_) throw Error(cat("checkpoint file ", path_, ": a field read out of turn"));
    pending_ = 0;
    if (!on_device) {
      raw(data, n);
      return;
    }
    // Chunk k is read into one pinned buffer while chunk k - 1 is copied from the other.
    if (!staging_) staging_.emplace(runtime_);
    auto& buffer = staging_->buffer;
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    auto* to = static_cast<std::byte*>(data);
    for (std::uint64_t at = 0, k = 0; at < n; at += PinnedChunks::kChunk, ++k) {
      const std::uint64_t len = std::min(PinnedChunks::kChunk, n - at);
      raw(buffer[k % 2].data(), len);
      space_.fence("kodo::checkpoint read");  // chunk k - 1's copy, from the other buffer
      Kokkos::deep_copy(
          space_, Kokkos::View<std::byte*, ExecutionSpace::memory_space, Unmanaged>(to + at, len),
          Kokkos::View<const std::byte*, Kokkos::HostSpace, Unmanaged>(buffer[k % 2].data(), len));
    }
    space_.fence("kodo::checkpoint read");
  }

 private:
  static std::string describe(FieldKind kind, std::uint32_t element_size, std::uint32_t rank) {
    const char* k = kind == FieldKind::value      ? "a value"
                    : kind == FieldKind::sequence ? "a sequence"
                    : kind == FieldKind::view     ? "a view"
                                                  : "an unknown kind";
    return kind == FieldKind::view ? cat(k, " of rank ", rank, " of ", element_size, "-byte values")
                                   : cat(k, " of ", element_size, " bytes");
  }

  // n bytes of the file, through a buffer for the small ones, and the checksum.
  void raw(void* into, std::uint64_t n) {
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
      p += k, n -= k, at_ += k;
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
  std::uint64_t at_ = 0, file_at_ = 0, pending_ = 0;  // bytes consumed, read from the file
  std::array<std::byte, 65536> held_{};
  std::uint64_t held_at_ = 0, held_end_ = 0;
  Checksum checksum_;
  int field_ = 0;
  Runtime& runtime_;
  const ExecutionSpace& space_;
  std::optional<PinnedChunks> staging_;
};

}  // namespace

void read_unit(Runtime& runtime, const std::string& path, const SavedCollectionRecord& collection,
               std::int64_t linear, const std::function<void(StateReader&)>& visit) {
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
