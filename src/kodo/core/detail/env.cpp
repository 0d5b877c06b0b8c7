#include <kodo/core/detail/env.hpp>

#include <kodo/core/error.hpp>
#include <kodo/core/numeric.hpp>

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace kodo::detail {

std::uint64_t parse_bytes(const char* name, const char* text, std::uint64_t max) {
  const std::string_view s = text;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  const std::string_view suffix(end, static_cast<std::size_t>(s.data() + s.size() - end));
  const int shift = suffix.empty()  ? 0
                    : suffix == "K" ? 10
                    : suffix == "M" ? 20
                    : suffix == "G" ? 30
                                    : -1;
  const auto bytes = error == std::errc{} && shift >= 0
                         ? checked_mul(value, std::uint64_t{1} << shift)
                         : std::nullopt;
  if (!bytes || *bytes > max)
    throw Error(cat(name, " must be a number of bytes from 0 to ", max,
                    " (digits, optionally followed by K, M or G), not '", s, "'"));
  return *bytes;
}

std::optional<double> seconds_from_environment(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0) || seconds > 1e9)
    throw Error(cat(name, " must be a positive number of seconds, not '", text, "'"));
  return seconds;
}

bool switch_from_environment(const char* name) {
  const std::string_view text = std::getenv(name) ? std::getenv(name) : "";
  if (text.empty() || text == "0") return false;
  if (text == "1") return true;
  throw Error(cat(name, " must be 0 or 1, not '", text, "'"));
}

std::uint64_t bytes_from_environment(const char* name, std::uint64_t fallback, std::uint64_t max) {
  const char* text = std::getenv(name);
  return text ? parse_bytes(name, text, max) : fallback;
}

}  // namespace kodo::detail
