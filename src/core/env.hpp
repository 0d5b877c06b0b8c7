#pragma once
// Sizes in bytes read from environment variables (KODO_EAGER_BYTES, KODO_CALL_POOL_BYTES).

#include <cstdint>

namespace kodo::detail {

// The value of environment variable `name` as a number of bytes: decimal digits,
// optionally followed by K, M or G (2^10, 2^20, 2^30); `fallback` when it is not set.
// Throws kodo::Error naming the variable when it is anything else or exceeds `max`.
std::uint64_t bytes_from_environment(const char* name, std::uint64_t fallback, std::uint64_t max);

// The same for a given text (what the variable holds).
std::uint64_t parse_bytes(const char* name, const char* text, std::uint64_t max);

}  // namespace kodo::detail
