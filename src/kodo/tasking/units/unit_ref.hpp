// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// UnitRef: a reference to one unit of a collection, local or remote, through which its
/// entry methods are invoked (collection.hpp says how an invocation travels).

#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/detail/entry.hpp>

#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>

namespace kodo {

/// A reference to one unit, local or remote, for invoking its entry methods.
template <class U>
class UnitRef {
 public:
  /// The unit at `index` of collection number `collection`, of shape `shape`; throws
  /// kodo::Error when `index` is outside it. (Collection::operator[] makes them.)
  UnitRef(Runtime* runtime, std::uint32_t collection, Extent3 shape, Index3 index)
      : runtime_(runtime), collection_(collection), shape_(shape), index_(index) {
    if (!shape_.contains(index_))
      throw Error(detail::cat("unit ", index_, " is outside its collection of shape ", shape_));
  }

  /// Invokes entry method M on the unit with `args` (copied now, run later).
  template <auto M, class... A>
  void send(A&&... args) const {
    using E = detail::Entry<U, M>;
    static_assert(sizeof...(A) == std::tuple_size_v<typename E::Arguments>,
                  "kodo: wrong number of arguments for this entry method");
    const std::int64_t linear = shape_.linear(index_);
    const int owner = runtime_->collection(collection_).map().owner(linear);
    detail::Message m;
    m.header = {detail::MessageKind::invoke, collection_, E::id, linear, runtime_->rank()};
    if (owner == runtime_->rank())
      m.local = std::make_unique<typename E::Kept>(std::forward<A>(args)...);
    else
      E::serialize(m, std::forward<A>(args)...);
    runtime_->post(owner, std::move(m));
  }

  /// The unit's index in its collection.
  Index3 index() const { return index_; }

 private:
  Runtime* runtime_;
  std::uint32_t collection_;
  Extent3 shape_;
  Index3 index_;
};

}  // namespace kodo
