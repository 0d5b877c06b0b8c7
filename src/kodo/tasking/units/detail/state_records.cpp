// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/units/detail/state_records.hpp>

#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>

#include <algorithm>
#include <cstring>

namespace kodo::detail {

// Collective calls (checkpoints, rebalancing) from an entry method would wait for ranks
// that are themselves waiting in run().
bool RuntimeAccess::running(Runtime& runtime) { return runtime.scheduler().running(); }
Watchdog& RuntimeAccess::watchdog(Runtime& runtime) { return runtime.scheduler().watchdog(); }

std::vector<std::uint64_t> view_sizes(std::span<const std::byte> records,
                                      const std::string& origin) {
  std::vector<std::uint64_t> sizes;
  std::uint64_t at = 0;
  const auto take = [&](void* into, std::uint64_t n) {
    if (n > records.size() - at) throw Error(cat(origin, " ends inside a record"));
    std::memcpy(into, records.data() + at, n);
    at += n;
  };
  while (at < records.size()) {
    std::uint32_t name = 0, element = 0, rank = 0;
    std::uint8_t kind = 0;
    std::uint64_t bytes = 0;
    take(&name, 4);
    if (name > kNameLimit || name > records.size() - at)
      throw Error(cat(origin, ": a record has a malformed name"));
    at += name;
    take(&kind, 1);
    take(&element, 4);
    take(&rank, 4);
    if (rank > 8) throw Error(cat(origin, ": a record has rank ", rank));
    for (std::uint32_t d = 0; d < rank; ++d) {
      std::int64_t extent = 0;
      take(&extent, 8);
    }
    take(&bytes, 8);
    if (static_cast<FieldKind>(kind) == FieldKind::view) {
      sizes.push_back(bytes);
    } else {
      if (bytes > records.size() - at) throw Error(cat(origin, ": a record extends past its end"));
      at += bytes;
    }
  }
  return sizes;
}

RecordSink::RecordSink(RecordOutput& out, Runtime& runtime, ViewsApart* views)
    : out_(out),
      views_(views),
      runtime_(runtime),
      space_(runtime.streams().communication(0).space()) {
  keeps_views = views != nullptr;
}

void RecordSink::field(std::string_view name, const FieldShape& shape, const void* data,
                       bool on_device) {
  if (name.empty() || name.size() > kNameLimit)
    throw Error(cat("a state field's name has 1 to ", kNameLimit, " characters, not ",
                    name.size()));
  out_.put(static_cast<std::uint32_t>(name.size()));
  out_.write(name.data(), name.size());
  out_.put(static_cast<std::uint8_t>(shape.kind));
  out_.put(shape.element_size);
  out_.put(shape.rank);
  for (std::uint32_t d = 0; d < shape.rank; ++d) out_.put(shape.extents[d]);
  out_.put(shape.bytes);
  if (views_ && shape.kind == FieldKind::view) {
    views_->segments.push_back(Segment{const_cast<void*>(data), shape.bytes,
                                       on_device ? memory_kind<ExecutionSpace::memory_space>()
                                                 : MemoryKind::host});
    return;
  }
  if (!on_device) {
    out_.write(data, shape.bytes);
    return;
  }
  // Chunk k + 1 is copied on the stream while chunk k is written.
  static const std::string region = "kodo::state copy out";
  const ToolRegion here(region);
  if (!staging_) staging_.emplace(runtime_);
  auto& buffer = staging_->buffer;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  const auto* from = static_cast<const std::byte*>(data);
  auto copy = [&](std::uint64_t at, int into) {
    const std::uint64_t n = std::min(PinnedChunks::kChunk, shape.bytes - at);
    Kokkos::deep_copy(
        space_, Kokkos::View<std::byte*, Kokkos::HostSpace, Unmanaged>(buffer[into].data(), n),
        Kokkos::View<const std::byte*, ExecutionSpace::memory_space, Unmanaged>(from + at, n));
  };
  if (shape.bytes > 0) copy(0, 0);
  for (std::uint64_t at = 0, k = 0; at < shape.bytes; at += PinnedChunks::kChunk, ++k) {
    space_.fence("kodo::state write");
    if (at + PinnedChunks::kChunk < shape.bytes) copy(at + PinnedChunks::kChunk, int((k + 1) % 2));
    out_.write(buffer[k % 2].data(), std::min(PinnedChunks::kChunk, shape.bytes - at));
  }
}

RecordSource::RecordSource(std::string origin, std::uint64_t size, Runtime& runtime)
    : origin_(std::move(origin)),
      size_(size),
      runtime_(runtime),
      space_(runtime.streams().communication(0).space()) {}

void RecordSource::bytes(void* into, std::uint64_t n, const char* what) {
  if (n > size_ - at_) throw Error(cat(origin_, " ends inside ", what));
  take_raw(into, n);
}

namespace {
std::string describe(FieldKind kind, std::uint32_t element_size, std::uint32_t rank) {
  const char* k = kind == FieldKind::value      ? "a value"
                  : kind == FieldKind::sequence ? "a sequence"
                  : kind == FieldKind::view     ? "a view"
                                                : "an unknown kind";
  return kind == FieldKind::view ? cat(k, " of rank ", rank, " of ", element_size, "-byte values")
                                 : cat(k, " of ", element_size, " bytes");
}
}  // namespace

FieldShape RecordSource::next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                              std::uint32_t rank) {
  ++field_;
  if (at_end())
    throw Error(cat(origin_, " holds ", field_ - 1,
                    " fields; the unit's state() reads more (field '", name, "')"));
  const auto length = take<std::uint32_t>("a field name");
  if (length > kNameLimit || length > size_ - at_)
    throw Error(cat(origin_, ": field ", field_, " has a malformed name"));
  std::string saved(length, '\0');
  bytes(saved.data(), length, "a field name");
  FieldShape s;
  s.kind = static_cast<FieldKind>(take<std::uint8_t>("a field"));
  s.element_size = take<std::uint32_t>("a field");
  s.rank = take<std::uint32_t>("a field");
  if (s.rank > 8)
    throw Error(cat(origin_, ": field ", quoted_excerpt(saved), " has rank ", s.rank));
  std::optional<std::uint64_t> bytes = s.element_size == 0 || s.element_size > (1u << 20)
                                           ? std::nullopt
                                           : std::optional(std::uint64_t{s.element_size});
  for (std::uint32_t d = 0; d < s.rank; ++d) {
    s.extents[d] = take<std::int64_t>("a field's extents");
    if (s.extents[d] < 0 || s.extents[d] > kExtentLimit) bytes = std::nullopt;
    if (bytes) bytes = checked_mul(*bytes, static_cast<std::uint64_t>(s.extents[d]));
  }
  s.bytes = take<std::uint64_t>("a field");
  pending_view_ = apart_given_ && s.kind == FieldKind::view;
  const std::uint64_t room = pending_view_ ? apart_bytes_ - apart_at_ : size_ - at_;
  if (!bytes || s.bytes != *bytes || s.bytes > room)
    throw Error(cat(origin_, ": field ", quoted_excerpt(saved),
                    " has a malformed size or extends past the end of the state"));
  if (saved != name || s.kind != kind || s.element_size != element_size || s.rank != rank)
    throw Error(cat(origin_, ": field ", field_, " is ", quoted_excerpt(saved), " (",
                    describe(s.kind, s.element_size, s.rank), "); the unit's state() reads '", name,
                    "' (", describe(kind, element_size, rank), ") there"));
  pending_ = s.bytes;
  return s;
}

void RecordSource::read(void* data, std::uint64_t n, bool on_device) {
  if (n != pending_) throw Error(cat(origin_, ": a field read out of turn"));
  pending_ = 0;
  if (pending_view_) {
    pending_view_ = false;
    const MemoryKind device = memory_kind<ExecutionSpace::memory_space>();
    auto* from = const_cast<std::byte*>(apart_ + apart_at_);
    apart_at_ += n;
    if (n == 0) return;
    copy_bytes(space_, Segment{data, n, on_device ? device : MemoryKind::host},
               Segment{from, n, apart_on_device_ ? device : MemoryKind::host}, n);
    space_.fence("kodo::state read");
    return;
  }
  if (!on_device) {
    take_raw(data, n);
    return;
  }
  // Chunk k is read into one pinned buffer while chunk k - 1 is copied from the other.
  static const std::string region = "kodo::state copy in";
  const ToolRegion here(region);
  if (!staging_) staging_.emplace(runtime_);
  auto& buffer = staging_->buffer;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  auto* to = static_cast<std::byte*>(data);
  for (std::uint64_t at = 0, k = 0; at < n; at += PinnedChunks::kChunk, ++k) {
    const std::uint64_t len = std::min(PinnedChunks::kChunk, n - at);
    take_raw(buffer[k % 2].data(), len);
    space_.fence("kodo::state read");  // chunk k - 1's copy, from the other buffer
    Kokkos::deep_copy(
        space_, Kokkos::View<std::byte*, ExecutionSpace::memory_space, Unmanaged>(to + at, len),
        Kokkos::View<const std::byte*, Kokkos::HostSpace, Unmanaged>(buffer[k % 2].data(), len));
  }
  space_.fence("kodo::state read");
}

}  // namespace kodo::detail
