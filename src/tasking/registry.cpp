#include "registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace kodo::detail {
namespace {

struct Entry {
  std::string name;
  const void* handler;
};

// Function-local so that registration from static initialisers in any order is safe.
std::unordered_map<HandlerId, Entry>& table() {
  static std::unordered_map<HandlerId, Entry> t;
  return t;
}
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

HandlerId register_handler(std::string_view name, const void* handler) {
  const HandlerId id = hash_name(name);
  std::lock_guard lock(table_mutex());
  auto [it, inserted] = table().try_emplace(id, Entry{std::string(name), handler});
  if (!inserted && (it->second.name != name || it->second.handler != handler)) {
    // Different handlers under one id: a hash collision, or two types that print alike
    // (e.g. unit classes of the same name in anonymous namespaces of two files).
    std::fprintf(stderr,
                 "kodo: fatal: two different handlers share an id; give unit classes distinct "
                 "names outside anonymous namespaces:\n  %s\n  %.*s\n",
                 it->second.name.c_str(), static_cast<int>(name.size()), name.data());
    std::abort();
  }
  return id;
}

const void* find_handler(HandlerId id) {
  std::lock_guard lock(table_mutex());
  auto it = table().find(id);
  return it == table().end() ? nullptr : it->second.handler;
}

std::string handler_name(HandlerId id) {
  std::lock_guard lock(table_mutex());
  auto it = table().find(id);
  return it == table().end() ? std::string("<unknown>") : it->second.name;
}

}  // namespace kodo::detail
