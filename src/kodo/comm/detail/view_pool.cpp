// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/comm/detail/view_pool.hpp>

#include <kodo/core/settings.hpp>

#include <algorithm>
#include <bit>
#include <limits>

namespace kodo::detail {

std::uint64_t ViewPool::idle_bound_from_environment() {
  return bytes_setting("KODO_CALL_POOL_BYTES", kDefaultCallPoolBytes);
}

std::size_t ViewPool::class_elements(std::size_t n, std::size_t element) {
  constexpr std::size_t kSmallest = 256;
  const std::size_t bytes = n * element;  // at most kMaxViewDataBytes: the caller checked
  std::size_t rounded = kSmallest;
  if (bytes > kSmallest) {
    // 2^k < bytes <= 2^(k+1): rounded up to a multiple of 2^k / 4.
    const std::size_t step = (std::size_t{1} << (std::bit_width(bytes - 1) - 1)) / 4;
    rounded = (bytes + step - 1) / step * step;
  }
  return (rounded + element - 1) / element;
}

std::size_t ViewPool::KeyHash::operator()(const Key& key) const {
  std::size_t h = key.type.hash_code();
  for (std::size_t e : key.extents) h = h * 1099511628211ull ^ e;
  return h;
}

ViewPool::Held* ViewPool::reuse(const Key& key) {
  const auto shelf = shelves_.find(key);
  if (shelf == shelves_.end()) return nullptr;
  Held* best = nullptr;
  for (const auto& held : shelf->second)
    if ((!best || held->last_use > best->last_use) && held->idle()) best = held.get();
  return best;
}

void ViewPool::make_room() {
  std::vector<Held*> idle;
  std::uint64_t idle_bytes = 0;
  for (const auto& [key, shelf] : shelves_)
    for (const auto& held : shelf)
      if (held->idle()) {
        idle.push_back(held.get());
        idle_bytes += held->bytes;
      }
  if (idle_bytes <= idle_bound_) return;
  std::sort(idle.begin(), idle.end(),
            [](const Held* a, const Held* b) { return a->last_use < b->last_use; });
  for (Held* held : idle) {
    if (idle_bytes <= idle_bound_) break;
    held->freed = true;
    idle_bytes -= held->bytes;
    held_bytes_ -= held->bytes;
  }
  for (auto shelf = shelves_.begin(); shelf != shelves_.end();) {
    std::erase_if(shelf->second, [](const std::unique_ptr<Held>& h) { return h->freed; });
    shelf = shelf->second.empty() ? shelves_.erase(shelf) : std::next(shelf);
  }
}

void ViewPool::add(const Key& key, std::unique_ptr<Held> held) {
  held_bytes_ += held->bytes;
  ++allocations_;
  shelves_[key].push_back(std::move(held));
}

std::uint64_t ViewPool::idle_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& [key, shelf] : shelves_)
    for (const auto& held : shelf)
      if (held->idle()) bytes += held->bytes;
  return bytes;
}

void ViewPool::clear() {
  shelves_.clear();
  held_bytes_ = 0;
}

}  // namespace kodo::detail
