// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A staying unit's state, held in memory (held_state.hpp).
#include <kodo/tasking/migration/detail/held_state.hpp>

#include <kodo/comm/detail/channel_end.hpp>
#include <kodo/core/error.hpp>

namespace kodo::detail {

void HeldSink::field(std::string_view name, const FieldShape& shape, const void* data,
                     bool on_device) {
  HeldField f{std::string(name), shape, data, on_device, {}};
  if (shape.kind != FieldKind::view) {
    const auto* bytes = static_cast<const std::byte*>(data);
    f.copy.assign(bytes, bytes + shape.bytes);
    f.data = nullptr;  // `copy` holds it: its address may move with the vector of fields
  }
  fields.push_back(std::move(f));
}

FieldShape HeldSource::next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                            std::uint32_t rank) {
  if (at_ == fields_.size())
    throw Error(
        cat("a rebuilt unit's state() reads more fields than the unit it replaces "
            "wrote (field '",
            name, "')"));
  const HeldField& f = fields_[at_++];
  if (f.name != name || f.shape.kind != kind || f.shape.element_size != element_size ||
      f.shape.rank != rank)
    throw Error(cat("a rebuilt unit's state() reads field '", name,
                    "' where the unit it "
                    "replaces wrote '",
                    f.name, "' of another kind or size: state() must walk the same fields"));
  return f.shape;
}

void HeldSource::read(void* data, std::uint64_t n, bool on_device) {
  const HeldField& f = fields_[at_ - 1];
  const void* from = f.data ? f.data : f.copy.data();
  if (n == 0 || from == data) return;
  const MemoryKind device = memory_kind<ExecutionSpace::memory_space>();
  copy_bytes(space_, Segment{data, n, on_device ? device : MemoryKind::host},
             Segment{const_cast<void*>(from), n, f.on_device ? device : MemoryKind::host}, n);
}

}  // namespace kodo::detail
