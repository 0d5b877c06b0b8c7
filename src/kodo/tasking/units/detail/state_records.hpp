// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A unit's state() as a sequence of field records: written (RecordSink) and read back
// checked (RecordSource). A checkpoint holds a unit's records after its header, and a
// unit moving to another rank (migration.hpp) travels as them, so both write the same
// bytes. A record: the name's length (u32) and the name, the kind (u8), the element size
// (u32), the rank (u32) and that many extents (i64), the data's bytes (u64), the data.
// Device fields pass through two pinned host chunks. Internal (not installed).

#include <kodo/backends/detail/memory.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/unit_state.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kodo::detail {

class Watchdog;

inline constexpr std::uint32_t kNameLimit = 4096;
inline constexpr std::int64_t kExtentLimit = std::int64_t{1} << 48;

// What the state's files and messages use of the runtime (a friend of Runtime).
struct RuntimeAccess {
  // The runtime's pinned staging, reused (freeing pinned memory waits for the device).
  static Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace> staging(Runtime& runtime,
                                                                         std::size_t bytes) {
    return runtime.pinned_staging(bytes);
  }
  static bool running(Runtime& runtime);  // inside run()
  // What watches the collective phases (watchdog.hpp: WatchdogPhase).
  static Watchdog& watchdog(Runtime& runtime);
  static ChannelHost& channel_host(Runtime& runtime) { return runtime.channel_host(); }
  static CollectionBase& collection(Runtime& runtime, std::uint32_t id) {
    return runtime.collection(id);
  }
};

// Two pinned host buffers: a device field is copied through one while the other is
// read or written.
class PinnedChunks {
 public:
  static constexpr std::uint64_t kChunk = std::uint64_t{16} << 20;
  Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace> buffer[2];
  explicit PinnedChunks(Runtime& runtime) {
    for (auto& b : buffer) b = RuntimeAccess::staging(runtime, kChunk);  // two, both held
  }
};

// Where records go: a file, a message.
class RecordOutput {
 public:
  virtual void write(const void* data, std::uint64_t bytes) = 0;
  template <class T>
  void put(const T& value) {
    write(&value, sizeof value);
  }

 protected:
  ~RecordOutput() = default;
};

// A moving unit's views, sent apart from its records: their memory, kept alive.
struct ViewsApart {
  std::vector<Segment> segments;
  std::vector<std::shared_ptr<const void>> kept;
};

// The sizes of the views a unit's records (written with views apart) name, each record
// checked to lie inside them; throws kodo::Error naming `origin` otherwise.
std::vector<std::uint64_t> view_sizes(std::span<const std::byte> records,
                                      const std::string& origin);

// Writes each field of a state() walk as a record to `out`. With `views` given, a view's
// record carries no data: the view goes to `views` instead (a moving unit's views travel
// apart, device to device; migration.cpp).
class RecordSink final : public StateSink {
 public:
  RecordSink(RecordOutput& out, Runtime& runtime, ViewsApart* views = nullptr);
  void field(std::string_view name, const FieldShape& shape, const void* data,
             bool on_device) override;
  void keep(std::shared_ptr<const void> view) override { views_->kept.push_back(std::move(view)); }

 private:
  RecordOutput& out_;
  ViewsApart* views_;
  Runtime& runtime_;
  const ExecutionSpace& space_;
  std::optional<PinnedChunks> staging_;
};

// Reads records for a state() walk, each checked before it is used: `origin` names where
// they come from in errors ("checkpoint file F", "unit L sent by rank R"), `size` is how
// many bytes there are. Subclasses supply the bytes.
class RecordSource : public StateSource {
 public:
  RecordSource(std::string origin, std::uint64_t size, Runtime& runtime);

  template <class T>
  T take(const char* what) {
    T v;
    bytes(&v, sizeof v, what);
    return v;
  }
  void bytes(void* into, std::uint64_t n, const char* what);
  bool at_end() const { return at_ == size_; }
  std::uint64_t left() const { return size_ - at_; }
  const std::string& origin() const { return origin_; }

  FieldShape next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                  std::uint32_t rank) override;
  void read(void* data, std::uint64_t n, bool on_device) override;
  // The views' data is not in the records but at `data` (`bytes`, in device memory when
  // `on_device`), one view after the other (RecordSink with views).
  void views_apart(const std::byte* data, std::uint64_t bytes, bool on_device) {
    apart_ = data, apart_bytes_ = bytes, apart_on_device_ = on_device, apart_given_ = true;
  }

 protected:
  ~RecordSource() = default;
  // The next n bytes (the caller checked that there are that many).
  virtual void raw(void* into, std::uint64_t n) = 0;

 private:
  void take_raw(void* into, std::uint64_t n) {
    raw(into, n);
    at_ += n;
  }
  std::string origin_;
  std::uint64_t size_, at_ = 0, pending_ = 0;
  int field_ = 0;
  bool pending_view_ = false;
  const std::byte* apart_ = nullptr;  // views_apart
  std::uint64_t apart_bytes_ = 0, apart_at_ = 0;
  bool apart_on_device_ = false, apart_given_ = false;
  Runtime& runtime_;
  const ExecutionSpace& space_;
  std::optional<PinnedChunks> staging_;
};

}  // namespace kodo::detail
