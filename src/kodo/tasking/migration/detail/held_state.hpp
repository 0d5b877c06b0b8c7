// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A staying unit's state, held in memory while a migration rebuilds its unit
// (Migration::copy): written by the unit it replaces (HeldSink), read by the new one
// (HeldSource), field by field, with no records in between.

#include <kodo/backends/detail/memory.hpp>
#include <kodo/tasking/units/unit_state.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kodo::detail {

// A staying unit's fields, as the unit it replaces wrote them: views kept alive where
// they are (state() may write a temporary), other fields copied.
struct HeldField {
  std::string name;
  FieldShape shape;
  const void* data;
  bool on_device;
  std::vector<std::byte> copy;  // a value's or a sequence's bytes
};

class HeldSink final : public StateSink {
 public:
  HeldSink() { keeps_views = true; }
  void keep(std::shared_ptr<const void> view) override { kept.push_back(std::move(view)); }
  void field(std::string_view name, const FieldShape& shape, const void* data,
             bool on_device) override;
  std::vector<HeldField> fields;
  std::vector<std::shared_ptr<const void>> kept;
};

class HeldSource final : public StateSource {
 public:
  HeldSource(const std::vector<HeldField>& fields, const ExecutionSpace& space)
      : fields_(fields), space_(space) {}
  FieldShape next(std::string_view name, FieldKind kind, std::uint32_t element_size,
                  std::uint32_t rank) override;
  void read(void* data, std::uint64_t n, bool on_device) override;
  bool at_end() const { return at_ == fields_.size(); }

 private:
  const std::vector<HeldField>& fields_;
  std::size_t at_ = 0;
  const ExecutionSpace& space_;
};

}  // namespace kodo::detail
