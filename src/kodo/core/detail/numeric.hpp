// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Overflow-checked arithmetic for sizes that come from outside (the wire, the command
// line), and the stable 64-bit hash kodo names things with.

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace kodo::detail {

// a * b and a + b, or nothing when the result does not fit.
inline std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}
inline std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) return std::nullopt;
  return a + b;
}

// FNV-1a: the same bits in every process and on every platform.
constexpr std::uint64_t hash_name(std::string_view name,
                                  std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace kodo::detail
