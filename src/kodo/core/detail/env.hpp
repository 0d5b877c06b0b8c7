#pragma once
// Settings read from environment variables: sizes in bytes (KODO_EAGER_BYTES,
// KODO_CALL_POOL_BYTES), durations (KODO_STALL_SECONDS) and switches (KODO_STALL_EXIT).
// Anything malformed throws kodo::Error naming the variable.

#include <cstdint>
#include <optional>

namespace kodo::detail {

// The value of environment variable `name` as a number of bytes: decimal digits,
// optionally followed by K, M or G (2^10, 2^20, 2^30); `fallback` when it is not set.
// Throws kodo::Error naming the variable when it is anything else or exceeds `max`.
std::uint64_t bytes_from_environment(const char* name, std::uint64_t fallback, std::uint64_t max);

// The same for a given text (what the variable holds).
std::uint64_t parse_bytes(const char* name, const char* text, std::uint64_t max);

// A positive number of seconds, or nothing when the variable is unset or empty.
std::optional<double> seconds_from_environment(const char* name);

// 0 or 1; false when unset or empty.
bool switch_from_environment(const char* name);

}  // namespace kodo::detail
