// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Storage kept for what a rank makes and destroys every step, per unit (a kernel of a
// batch, a queued callback, a transfer's hand-over, a queue's block, a task's coroutine
// frame): instead of a heap allocation each (a sampled unit-step spent a fifth of its
// host time in malloc and free), a block a step freed is taken again by the next. Blocks
// come in size classes of 64 bytes to 4 KiB, kept per thread up to 256 KiB a class
// (larger requests go to the heap):
//   - `struct K : Base, Recycled<K>` for objects made with new and delete;
//   - RecycledAllocator for containers and std::allocate_shared (RecycledDeque, RecycledMap);
//   - recycled(lambda), for a continuation a std::function holds (libstdc++'s makes a large
//     one with `new`).

#include <algorithm>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo::detail {

template <std::size_t Bytes>
class RecycledStorage {
 public:
  static constexpr std::size_t kKept = std::clamp<std::size_t>((256 << 10) / Bytes, 16, 1024);
  static void* take() {
    if (gone()) return ::operator new(Bytes);
    auto& kept = blocks().kept;
    if (kept.empty()) return ::operator new(Bytes);
    void* p = kept.back();
    kept.pop_back();
    return p;
  }
  static std::size_t kept() { return gone() ? 0 : blocks().kept.size(); }  // (tests)
  static void give(void* p) noexcept {
    if (gone()) return ::operator delete(p);
    auto& kept = blocks().kept;
    if (kept.size() < kKept) {
      if (kept.capacity() == 0) try {
          kept.reserve(kKept);
        } catch (...) {  // (no room to keep it: it goes back to the heap)
        }
      if (kept.size() < kept.capacity()) return kept.push_back(p);
    }
    ::operator delete(p);
  }

 private:
  struct Blocks {
    std::vector<void*> kept;
    ~Blocks() {
      for (void* p : kept) ::operator delete(p);
      gone() = true;
    }
  };
  // Whether the thread's blocks are destroyed (its thread_local objects end before static
  // ones, which may still give storage back): a flag with no destructor, valid till then.
  static bool& gone() {
    thread_local bool flag = false;
    return flag;
  }
  static Blocks& blocks() {
    thread_local Blocks b;
    return b;
  }
};

// A block of at least `bytes` (aligned as operator new aligns), and its return.
inline void* recycled_take(std::size_t bytes) {
  if (bytes <= 64) return RecycledStorage<64>::take();
  if (bytes <= 128) return RecycledStorage<128>::take();
  if (bytes <= 256) return RecycledStorage<256>::take();
  if (bytes <= 512) return RecycledStorage<512>::take();
  if (bytes <= 1024) return RecycledStorage<1024>::take();
  if (bytes <= 2048) return RecycledStorage<2048>::take();
  if (bytes <= 4096) return RecycledStorage<4096>::take();
  return ::operator new(bytes);
}
inline void recycled_give(void* p, std::size_t bytes) noexcept {
  if (bytes <= 64) return RecycledStorage<64>::give(p);
  if (bytes <= 128) return RecycledStorage<128>::give(p);
  if (bytes <= 256) return RecycledStorage<256>::give(p);
  if (bytes <= 512) return RecycledStorage<512>::give(p);
  if (bytes <= 1024) return RecycledStorage<1024>::give(p);
  if (bytes <= 2048) return RecycledStorage<2048>::give(p);
  if (bytes <= 4096) return RecycledStorage<4096>::give(p);
  ::operator delete(p);
}

// A base that gives T (the class deriving from it) recycled storage.
template <class T>
struct Recycled {
  static void* operator new(std::size_t bytes) { return recycled_take(bytes); }
  static void operator delete(void* p, std::size_t bytes) noexcept { recycled_give(p, bytes); }
};

// An allocator of recycled storage (over-aligned types go to the heap).
template <class T>
struct RecycledAllocator {
  using value_type = T;
  static constexpr bool kAligned = alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  RecycledAllocator() = default;
  template <class U>
  RecycledAllocator(const RecycledAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if constexpr (!kAligned) return std::allocator<T>().allocate(n);
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(recycled_take(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if constexpr (!kAligned) return std::allocator<T>().deallocate(p, n);
    recycled_give(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const RecycledAllocator<U>&) const noexcept {
    return true;
  }
};

// A function object in recycled storage once a std::function holds it.
template <class F>
struct RecycledFunction : Recycled<RecycledFunction<F>> {
  F f;
  template <class... A>
  decltype(auto) operator()(A&&... a) {
    return f(std::forward<A>(a)...);
  }
};
template <class F>
RecycledFunction<std::decay_t<F>> recycled(F&& f) {
  return {{}, std::forward<F>(f)};
}

// Queues and maps whose elements come and go every step.
template <class T>
using RecycledDeque = std::deque<T, RecycledAllocator<T>>;
template <class K, class V>
using RecycledMap = std::map<K, V, std::less<K>, RecycledAllocator<std::pair<const K, V>>>;

}  // namespace kodo::detail
