// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Reused memory for the views of calls from other ranks, and for the pinned host memory
// their data passes through on its way to the device when it arrives with the message.
// A rank's pool hands an allocation out again only while no other copy of it is alive, so
// a view an entry method received stays its own, and keeps its data, for as long as any
// copy of it exists. Idle allocations beyond KODO_CALL_POOL_BYTES (default 1 GiB) are
// freed, least recently used first, before the pool allocates.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kodo::detail {

inline constexpr std::uint64_t kDefaultCallPoolBytes = std::uint64_t{1} << 30;

// Allocating a view per call costs a device allocation, and dropping it a deallocation
// that may wait for the device: the pool keeps one managed view per allocation instead.
// Rank-1 views of LayoutLeft or LayoutRight come from allocations of size classes (at
// least 256 bytes; above that, powers of two and the quarter steps between them): a view
// of n elements is the first n of its class's allocation, a subview sharing its reference
// count. Views of other ranks and layouts come from allocations of their exact type and
// extents. Of the idle allocations that fit, the one used last is taken again. Only
// allocation makes the pool grow, and it first frees idle ones down to the bound, so
// whatever sizes arrive, what it holds beyond the views in use stays within the bound. It
// belongs to one runtime (the scheduler) and goes before Kokkos finalizes.
class ViewPool {
 public:
  // Pinned host memory (host memory on a host-only build).
  using Staging = Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace>;

  explicit ViewPool(std::uint64_t idle_bound) : idle_bound_(idle_bound) {}
  ViewPool(const ViewPool&) = delete;
  ViewPool& operator=(const ViewPool&) = delete;

  // KODO_CALL_POOL_BYTES, or the default; throws kodo::Error for anything but a number
  // of bytes.
  static std::uint64_t idle_bound_from_environment();

  // A view of type V (managed, non-const, run-time extents) with extents `ext`, none of
  // them 0, whose memory no other view uses.
  template <class V>
  V take(const std::array<std::size_t, V::rank()>& ext);

  // Pinned host memory of `bytes` (> 0) bytes.
  Staging staging(std::size_t bytes) { return take<Staging>({bytes}); }

  std::uint64_t idle_bound() const { return idle_bound_; }
  // Bytes of every allocation the pool holds, and of those no view outside it uses.
  std::uint64_t held_bytes() const { return held_bytes_; }
  std::uint64_t idle_bytes() const;
  // Allocations made so far.
  std::uint64_t allocations() const { return allocations_; }
  // Lets go of every allocation (views still in use keep theirs alive).
  void clear();

  // The elements of the allocation that serves a rank-1 view of `n` elements of
  // `element` bytes each (its size class).
  static std::size_t class_elements(std::size_t n, std::size_t element);

 private:
  struct Held {
    virtual ~Held() = default;
    virtual bool idle() const = 0;
    std::uint64_t bytes = 0, last_use = 0;
    bool freed = false;  // chosen by make_room
  };
  template <class V>
  struct HeldView final : Held {
    V view;
    bool idle() const override { return view.use_count() == 1; }
  };
  static constexpr std::size_t kMaxRank = 8;  // Kokkos' bound on a view's rank
  struct Key {
    std::type_index type;
    std::array<std::size_t, kMaxRank> extents;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& key) const;
  };

  Held* reuse(const Key& key);  // the idle allocation of `key` used last, or null
  void make_room();             // frees idle allocations beyond the bound
  void add(const Key& key, std::unique_ptr<Held> held);

  template <class V, std::size_t... I>
  static V allocate(const std::array<std::size_t, kMaxRank>& ext, std::index_sequence<I...>) {
    return V(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kodo::call_pool"), ext[I]...);
  }

  std::unordered_map<Key, std::vector<std::unique_ptr<Held>>, KeyHash> shelves_;
  std::uint64_t idle_bound_;
  std::uint64_t held_bytes_ = 0, clock_ = 0, allocations_ = 0;
};

template <class V>
V ViewPool::take(const std::array<std::size_t, V::rank()>& ext) {
  using Value = typename V::value_type;
  using Layout = typename V::array_layout;
  static_assert(!std::is_const_v<Value> && !V::memory_traits::is_unmanaged,
                "kodo: the pool holds managed views of non-const values");
  constexpr bool sliced = V::rank() == 1 && (std::is_same_v<Layout, Kokkos::LayoutLeft> ||
                                             std::is_same_v<Layout, Kokkos::LayoutRight>);
  Key key{typeid(V), {}};
  for (std::size_t d = 0; d < V::rank(); ++d) key.extents[d] = ext[d];
  if constexpr (sliced) key.extents[0] = class_elements(ext[0], sizeof(Value));
  auto* held = static_cast<HeldView<V>*>(reuse(key));
  if (!held) {
    make_room();
    auto fresh = std::make_unique<HeldView<V>>();
    fresh->view = allocate<V>(key.extents, std::make_index_sequence<V::rank()>{});
    fresh->bytes = fresh->view.size() * sizeof(Value);
    held = fresh.get();
    add(key, std::move(fresh));
  }
  held->last_use = ++clock_;
  if constexpr (sliced)
    return Kokkos::subview(held->view, std::make_pair(std::size_t{0}, ext[0]));
  else
    return held->view;
}

}  // namespace kodo::detail
