#include <kodo/tasking/checkpoint.hpp>

#include <kodo/core/agree.hpp>
#include <kodo/core/numeric.hpp>
#include <kodo/tasking/scheduler.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace kodo {
namespace detail {
namespace {

namespace fs = std::filesystem;

constexpr int kFormat = 1;
constexpr char kUnitMagic[8] = {'k', 'o', 'd', 'o', 'u', 'n', 'i', 't'};
constexpr std::uint64_t kManifestLimit = std::uint64_t{1} << 30;
constexpr std::uint32_t kNameLimit = 4096;
constexpr std::int64_t kExtentLimit = std::int64_t{1} << 48;
// In every checkpoint directory this code makes: only those are ever removed.
constexpr const char* kMarker = "/kodo-checkpoint";

std::string system_error(const std::string& what, const std::string& path) {
  return cat(what, " ", path, ": ", std::strerror(errno));
}

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

// A file written in full or not at all: data, then fsync, then close.
class OutputFile {
 public:
  explicit OutputFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(system_error("cannot create", path_));
  }
  ~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(const void* data, std::uint64_t n) {
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
  template <class T>
  void put(const T& value) {
    write(&value, sizeof value);
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

// A checkpoint file opened for reading, checked to be a regular file of `expected_bytes`.
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

// The whole of a file of `size` bytes.
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

// The number that is the whole of `text` (nothing before or after it), if it is one.
template <class T>
std::optional<T> parse_whole(std::string_view text, int base = 10) {
  T v{};
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// N of a directory entry named checkpoint-N or checkpoint-N.partial, else -1.
std::int64_t checkpoint_number(const std::string& name, bool* partial) {
  constexpr std::string_view prefix = "checkpoint-", suffix = ".partial";
  if (!name.starts_with(prefix)) return -1;
  std::string_view digits = std::string_view(name).substr(prefix.size());
  *partial = digits.ends_with(suffix);
  if (*partial) digits.remove_suffix(suffix.size());
  const auto n = parse_whole<std::int64_t>(digits);
  return n && *n >= 0 && *n <= (std::int64_t{1} << 62) ? *n : -1;
}

// `s` without white space at either end (the manifest keeps a value's inner text only).
std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n\v\f");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n\v\f") - first + 1);
}

std::string unit_file(const std::string& checkpoint, std::uint32_t collection,
                      std::int64_t linear) {
  return cat(checkpoint, "/c", collection, "-u", linear, ".state");
}

}  // namespace

// What checkpoints use of the runtime (a friend of Runtime).
struct CheckpointAccess {
  // The runtime's pinned staging, reused across checkpoints (freeing pinned memory would
  // wait for the whole device).
  static Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace> staging(Runtime& runtime,
                                                                         std::size_t bytes) {
    return runtime.pinned_staging(bytes);
  }
  static bool running(Runtime& runtime) { return runtime.scheduler().running(); }
};

// Checkpoints are collective: called from an entry method, one would wait for ranks
// that are themselves waiting in run().
void require_main_program(Runtime& runtime, const char* call) {
  if (CheckpointAccess::running(runtime))
    throw Error(cat(call,
                    " is collective: the main program of every rank calls it between "
                    "run() calls, never an entry method"));
}

// Two pinned host buffers: a device field is copied through one while the other is
// read or written.
class PinnedChunks {
 public:
  static constexpr std::uint64_t kChunk = std::uint64_t{16} << 20;
  Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace> buffer[2];
  explicit PinnedChunks(Runtime& runtime) {
    for (auto& b : buffer) b = CheckpointAccess::staging(runtime, kChunk);  // two, both held
  }
};

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

std::uint64_t checkpoint_checksum(const void* data, std::uint64_t bytes) {
  Checksum c;
  c.update(data, bytes);
  return c.value();
}

struct CheckpointWrite::Unit {
  std::uint32_t collection;
  std::int64_t linear;
  std::uint64_t bytes, checksum;
};

CheckpointWrite::CheckpointWrite(Runtime& runtime, const std::string& dir,
                                 const CheckpointInfo& info)
    : runtime_(runtime), dir_(dir), info_(info), started_(MPI_Wtime()) {
  require_main_program(runtime, "write_checkpoint");
  std::string problem;
  long long number = 0;
  if (runtime.rank() == 0) {
    try {
      if (info.application.empty() ||
          info.application.find_first_of(" \t\r\n\v\f") != std::string::npos)
        throw Error(cat("a checkpoint's application name is one word, not '", info.application,
                        "'"));
      for (const auto& [key, value] : info.keys)
        if (key.empty() || key.find_first_of(" \t\r\n\v\f") != std::string::npos ||
            value.find_first_of("\r\n") != std::string::npos || value != trimmed(value))
          throw Error(cat("a checkpoint key is one word and its value one line, not '", key,
                          "' = '", value, "'"));
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw Error(cat("cannot create checkpoint directory ", dir, ": ", ec.message()));
      // The next number; leftovers of a checkpoint that was never completed go.
      for (const auto& entry : fs::directory_iterator(dir)) {
        bool partial = false;
        const std::int64_t n = checkpoint_number(entry.path().filename().string(), &partial);
        if (n < 0) continue;
        number = std::max<long long>(number, n + 1);
        if (partial && fs::exists(entry.path().string() + kMarker)) fs::remove_all(entry.path());
      }
      const std::string partial = cat(dir, "/checkpoint-", number, ".partial");
      if (!fs::create_directory(partial, ec))
        throw Error(cat("cannot create checkpoint directory ", partial, ": ",
                        ec ? ec.message() : "it exists"));
      OutputFile(partial + kMarker).close();
    } catch (...) {
      problem = what_of_current();
    }
  }
  agree_and_report(runtime.comm(), problem);
  check_mpi(MPI_Bcast(&number, 1, MPI_LONG_LONG, 0, runtime.comm()), "MPI_Bcast");
  final_ = cat(dir, "/checkpoint-", number);
  partial_ = final_ + ".partial";
}

CheckpointWrite::~CheckpointWrite() = default;

void CheckpointWrite::add_collection(std::uint32_t id, const Extent3& shape,
                                     const char* unit_type) {
  for (const auto& c : collections_)
    if (c.id == id) throw Error(cat("collection ", id, " is listed twice in a checkpoint"));
  collections_.push_back({id, shape, unit_type, {}});
}

void CheckpointWrite::write_unit(std::uint32_t collection, std::int64_t linear,
                                 const std::function<void(StateWriter&)>& visit) {
  OutputFile file(unit_file(partial_, collection, linear));
  file.write(kUnitMagic, sizeof kUnitMagic);
  file.put(static_cast<std::uint32_t>(kFormat));
  file.put(collection);
  file.put(linear);
  const ExecutionSpace& space = runtime_.streams().communication(0).space();
  struct Sink final : StateSink {
    OutputFile& file;
    CheckpointWrite& write;
    const ExecutionSpace& space;
    Sink(OutputFile& f, CheckpointWrite& w, const ExecutionSpace& s)
        : file(f), write(w), space(s) {}
    void field(std::string_view name, const FieldShape& shape, const void* data,
               bool on_device) override {
      if (name.empty() || name.size() > kNameLimit)
        throw Error(cat("a state field's name has 1 to ", kNameLimit, " characters, not ",
                        name.size()));
      file.put(static_cast<std::uint32_t>(name.size()));
      file.write(name.data(), name.size());
      file.put(static_cast<std::uint8_t>(shape.kind));
      file.put(shape.element_size);
      file.put(shape.rank);
      for (std::uint32_t d = 0; d < shape.rank; ++d) file.put(shape.extents[d]);
      file.put(shape.bytes);
      if (!on_device) {
        file.write(data, shape.bytes);
        return;
      }
      // Chunk k + 1 is copied on the stream while chunk k is written.
      if (!write.staging_) write.staging_ = std::make_unique<PinnedChunks>(write.runtime_);
      auto& buffer = write.staging_->buffer;
      using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
      const auto* from = static_cast<const std::byte*>(data);
      auto copy = [&](std::uint64_t at, int into) {
        const std::uint64_t n = std::min(PinnedChunks::kChunk, shape.bytes - at);
        Kokkos::deep_copy(
            space, Kokkos::View<std::byte*, Kokkos::HostSpace, Unmanaged>(buffer[into].data(), n),
            Kokkos::View<const std::byte*, ExecutionSpace::memory_space, Unmanaged>(from + at, n));
      };
      if (shape.bytes > 0) copy(0, 0);
      for (std::uint64_t at = 0, k = 0; at < shape.bytes; at += PinnedChunks::kChunk, ++k) {
        space.fence("kodo::checkpoint write");
        if (at + PinnedChunks::kChunk < shape.bytes)
          copy(at + PinnedChunks::kChunk, int((k + 1) % 2));
        file.write(buffer[k % 2].data(), std::min(PinnedChunks::kChunk, shape.bytes - at));
      }
    }
  } sink(file, *this, space);
  StateWriter writer(sink);
  visit(writer);
  file.close();
  written_.push_back({collection, linear, file.bytes(), file.checksum()});
}

CheckpointReport CheckpointWrite::finish(const std::string& problem) {
  MPI_Comm comm = runtime_.comm();
  agree_and_report(comm, problem);
  // Every unit's file size and checksum, to rank 0.
  const int ranks = runtime_.size(), rank = runtime_.rank();
  int count = static_cast<int>(written_.size() * sizeof(Unit));
  std::vector<int> counts(ranks), offsets(ranks);
  check_mpi(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm), "MPI_Gather");
  std::vector<Unit> all;
  if (rank == 0) {
    std::int64_t total = 0;
    for (int r = 0; r < ranks; ++r) offsets[r] = static_cast<int>(total), total += counts[r];
    all.resize(static_cast<std::size_t>(total) / sizeof(Unit));
  }
  check_mpi(MPI_Gatherv(written_.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(),
                        MPI_BYTE, 0, comm),
            "MPI_Gatherv");
  std::string failed;
  if (rank == 0) {
    try {
      std::ostringstream m;
      m << "kodo-checkpoint " << kFormat << "\nkodo-version " << KODO_VERSION << "\napplication "
        << info_.application << "\nranks " << ranks << '\n';
      for (const auto& [key, value] : info_.keys) m << "key " << key << ' ' << value << '\n';
      for (const auto& c : collections_) {
        const std::int64_t units = c.shape.size();
        m << "collection " << c.id << ' ' << c.shape.x << ' ' << c.shape.y << ' ' << c.shape.z
          << " odf " << (units + ranks - 1) / ranks << " type " << c.unit_type << '\n';
        std::vector<const Unit*> by_linear(static_cast<std::size_t>(units), nullptr);
        for (const auto& u : all)
          if (u.collection == c.id) by_linear[static_cast<std::size_t>(u.linear)] = &u;
        for (std::int64_t l = 0; l < units; ++l) {
          const Unit* u = by_linear[static_cast<std::size_t>(l)];
          if (!u) throw Error(cat("unit ", l, " of collection ", c.id, " was not written"));
          m << "unit " << c.id << ' ' << l << ' ' << u->bytes << ' ' << std::hex << u->checksum
            << std::dec << '\n';
        }
      }
      m << "end\n";
      const std::string manifest = m.str();
      OutputFile file(partial_ + "/manifest");
      file.write(manifest.data(), manifest.size());
      file.close();
      sync_directory(partial_);
      rename_durably(partial_, final_, dir_);
      const std::string name = fs::path(final_).filename().string();
      {
        OutputFile latest(dir_ + "/latest.partial");
        const std::string line = cat(name, ' ', std::hex, file.checksum(), '\n');
        latest.write(line.data(), line.size());
        latest.close();
      }
      rename_durably(dir_ + "/latest.partial", dir_ + "/latest", dir_);
    } catch (...) {
      failed = what_of_current();
    }
  }
  agree_and_report(comm, failed);
  CheckpointReport report;
  report.path = final_;
  const double seconds = MPI_Wtime() - started_;
  check_mpi(MPI_Allreduce(&seconds, &report.seconds, 1, MPI_DOUBLE, MPI_MAX, comm),
            "MPI_Allreduce");
  unsigned long long bytes = 0, total = 0;
  for (const auto& u : written_) bytes += u.bytes;
  check_mpi(MPI_Allreduce(&bytes, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm),
            "MPI_Allreduce");
  report.bytes = total;
  // The previous checkpoints (this code's own) are no longer needed; one that cannot be
  // removed is left, with a warning: the new one is complete. No rank waits for this.
  if (rank == 0) {
    std::error_code ec;
    const std::string name = fs::path(final_).filename().string();
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      bool partial = false;
      const std::string other = entry.path().filename().string();
      if (other == name || checkpoint_number(other, &partial) < 0 || partial ||
          !fs::exists(entry.path().string() + kMarker))
        continue;
      fs::remove_all(entry.path(), ec);
      if (ec)
        print_error(detail::cat("kodo: warning: the previous checkpoint ", entry.path().string(),
                                " was not removed: ", ec.message()));
    }
  }
  return report;
}

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

}  // namespace detail

using detail::cat;

namespace {

// Rank 0's reading of D/latest and the manifest it names (checked against its checksum).
struct LatestManifest {
  std::string name, text;
};
LatestManifest read_latest(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(cat("checkpoint directory ", dir, " does not exist"));
  const std::string latest = dir + "/latest";
  if (!fs::exists(latest, ec))
    throw Error(cat("checkpoint directory ", dir, " holds no complete checkpoint (no ", latest,
                    ")"));
  const auto latest_size = fs::file_size(latest, ec);
  if (ec || latest_size > 256) throw Error(cat(latest, " is not a checkpoint's name"));
  const auto latest_bytes = detail::read_file(latest, latest_size);
  std::istringstream line(std::string(reinterpret_cast<const char*>(latest_bytes.data()),
                                      latest_bytes.size()));
  LatestManifest m;
  std::string sum, extra;
  bool partial = false;
  const bool named = line >> m.name >> sum && !(line >> extra);
  const auto manifest_sum = detail::parse_whole<std::uint64_t>(sum, 16);
  if (!named || !manifest_sum || detail::checkpoint_number(m.name, &partial) < 0 || partial)
    throw Error(cat(latest, " is not a checkpoint's name"));
  const std::string manifest = cat(dir, "/", m.name, "/manifest");
  const auto manifest_size = fs::file_size(manifest, ec);
  if (ec) throw Error(cat("checkpoint file ", manifest, " is missing"));
  if (manifest_size > detail::kManifestLimit)
    throw Error(cat("checkpoint file ", manifest, " is too large for a manifest"));
  const auto bytes = detail::read_file(manifest, manifest_size);
  if (detail::checkpoint_checksum(bytes.data(), bytes.size()) != *manifest_sum)
    throw Error(cat("checkpoint file ", manifest, " does not match its checksum in ", latest,
                    ": the file is corrupted"));
  m.text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return m;
}

void broadcast_string(std::string& s, MPI_Comm comm) {
  unsigned long long length = s.size();
  check_mpi(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm), "MPI_Bcast");
  s.resize(length);
  for (unsigned long long at = 0; at < length; at += 1 << 30) {
    const int n = static_cast<int>(std::min<unsigned long long>(length - at, 1 << 30));
    check_mpi(MPI_Bcast(s.data() + at, n, MPI_CHAR, 0, comm), "MPI_Bcast");
  }
}

}  // namespace

Checkpoint Checkpoint::open(Runtime& runtime, const std::string& dir,
                            std::string_view application) {
  detail::require_main_program(runtime, "Checkpoint::open");
  Checkpoint c;
  c.runtime_ = &runtime;
  // Rank 0 reads which checkpoint is the latest, and its manifest, for every rank: they
  // all restore the same one.
  LatestManifest m;
  std::string problem;
  if (runtime.rank() == 0) {
    try {
      m = read_latest(dir);
    } catch (...) {
      problem = detail::what_of_current();
    }
  }
  agree_and_report(runtime.comm(), problem);
  broadcast_string(m.name, runtime.comm());
  broadcast_string(m.text, runtime.comm());
  c.path_ = cat(dir, "/", m.name);
  const std::string manifest = c.path_ + "/manifest";
  // Every rank parses the same text, and so reaches the same verdict.
  std::istringstream in(m.text);
  auto bad = [&](std::size_t number, const std::string& what) {
    return Error(cat("checkpoint file ", manifest, ", line ", number, ": ", what));
  };
  std::string text;
  std::size_t number = 0;
  bool ended = false, have_application = false, have_version = false, have_ranks = false;
  while (std::getline(in, text)) {
    ++number;
    if (ended) throw bad(number, "text after 'end'");
    std::istringstream words(text);
    std::string word;
    words >> word;
    auto rest = [&] {
      std::string r;
      std::getline(words >> std::ws, r);
      return r;
    };
    auto integer = [&](std::int64_t min, std::int64_t max) {
      std::string w;
      words >> w;
      const auto v = detail::parse_whole<std::int64_t>(w);
      if (!v || *v < min || *v > max)
        throw bad(number, cat("'", w, "' is not a number from ", min, " to ", max));
      return *v;
    };
    auto no_more = [&] {
      std::string extra;
      if (words >> extra) throw bad(number, cat("unexpected '", extra, "'"));
    };
    auto once = [&](bool& seen) {
      if (seen) throw bad(number, cat("a second '", word, "' line"));
      seen = true;
    };
    if (number == 1) {
      if (word != "kodo-checkpoint") throw bad(number, "not a kodo checkpoint manifest");
      const std::string format = rest();
      if (format != std::to_string(detail::kFormat))
        throw bad(number, cat("the checkpoint is in format ", format, "; this kodo (", KODO_VERSION,
                              ") reads format ", detail::kFormat));
    } else if (word == "kodo-version") {
      once(have_version);
      c.kodo_version_ = rest();
    } else if (word == "application") {
      once(have_application);
      const std::string app = rest();
      if (app != application)
        throw Error(cat("checkpoint ", c.path_, " was written by ", app, ", not ", application));
    } else if (word == "ranks") {
      once(have_ranks);
      c.ranks_ = static_cast<int>(integer(1, INT32_MAX));
      no_more();
    } else if (word == "key") {
      std::string key;
      words >> key;
      if (key.empty()) throw bad(number, "a key without a name");
      for (const auto& [k, v] : c.keys_)
        if (k == key) throw bad(number, cat("key '", key, "' appears twice"));
      c.keys_.emplace_back(key, rest());
    } else if (word == "collection") {
      detail::SavedCollectionRecord r;
      r.id = static_cast<std::uint32_t>(integer(0, UINT32_MAX));
      r.shape.x = integer(1, INT64_MAX);
      r.shape.y = integer(1, INT64_MAX);
      r.shape.z = integer(1, INT64_MAX);
      const auto xy = detail::checked_mul(static_cast<std::uint64_t>(r.shape.x),
                                          static_cast<std::uint64_t>(r.shape.y));
      const auto xyz = xy ? detail::checked_mul(*xy, static_cast<std::uint64_t>(r.shape.z)) : xy;
      if (!xyz || *xyz > std::uint64_t{1} << 62)
        throw bad(number, "a collection of more than 2^62 units");
      std::string odf, type;
      words >> odf;
      integer(1, INT64_MAX);
      words >> type >> r.unit_type;
      if (odf != "odf" || type != "type" || r.unit_type.empty())
        throw bad(number, "a malformed collection line");
      no_more();
      for (const auto& other : c.collections_)
        if (other.id == r.id) throw bad(number, cat("collection ", r.id, " appears twice"));
      c.collections_.push_back(std::move(r));
    } else if (word == "unit") {
      const auto id = static_cast<std::uint32_t>(integer(0, UINT32_MAX));
      auto found = std::find_if(c.collections_.begin(), c.collections_.end(),
                                [&](const auto& r) { return r.id == id; });
      if (found == c.collections_.end())
        throw bad(number, cat("a unit of collection ", id, ", which is not listed before it"));
      const std::int64_t linear = integer(0, found->shape.size() - 1);
      detail::SavedUnit u;
      u.bytes = static_cast<std::uint64_t>(integer(0, INT64_MAX));
      std::string sum;
      words >> sum;
      const auto checksum = detail::parse_whole<std::uint64_t>(sum, 16);
      if (!checksum) throw bad(number, cat("'", sum, "' is not a checksum"));
      u.checksum = *checksum;
      no_more();
      // Units come in order, so the list grows by one each time.
      if (static_cast<std::int64_t>(found->units.size()) != linear)
        throw bad(number, cat("unit ", linear, " of collection ", id, " out of order"));
      found->units.push_back(u);
    } else if (word == "end") {
      no_more();
      ended = true;
    } else {
      throw bad(number, cat("unknown entry '", word, "'"));
    }
  }
  if (!ended) throw Error(cat("checkpoint file ", manifest, " is truncated (no 'end')"));
  if (!have_application || c.ranks_ == 0 || c.collections_.empty())
    throw Error(cat("checkpoint file ", manifest, " lacks its application, ranks or collections"));
  for (const auto& r : c.collections_)
    if (static_cast<std::int64_t>(r.units.size()) != r.shape.size())
      throw Error(cat("checkpoint file ", manifest, " lists ", r.units.size(), " of the ",
                      r.shape.size(), " units of collection ", r.id));
  return c;
}

const std::string& Checkpoint::value(std::string_view key) const {
  for (const auto& [k, v] : keys_)
    if (k == key) return v;
  throw Error(cat("checkpoint ", path_, " has no key '", key, "'"));
}

std::int64_t Checkpoint::integer(std::string_view key) const {
  const std::string& v = value(key);
  const auto n = detail::parse_whole<std::int64_t>(v);
  if (!n) throw Error(cat("checkpoint ", path_, ": key '", key, "' is '", v, "', not an integer"));
  return *n;
}

const detail::SavedCollectionRecord& Checkpoint::find(std::uint32_t id,
                                                      const char* unit_type) const {
  for (const auto& r : collections_) {
    if (r.id != id) continue;
    if (r.unit_type != unit_type)
      throw Error(cat("checkpoint ", path_, " holds collection ", id, " with units of type ",
                      r.unit_type, ", not ", unit_type));
    return r;
  }
  throw Error(cat("checkpoint ", path_, " holds no collection ", id));
}

}  // namespace kodo
