// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/units/detail/registry.hpp>

#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

namespace kodo::detail {
namespace {

struct Entry {
  std::string name;
  HandlerKind kind;
  std::type_index unit;
  const void* handler;
};

// Function-local so that registration from static initialisers in any order is safe.
// Ordered, so the fingerprint does not depend on registration order.
std::map<HandlerId, Entry>& table() {
  static std::map<HandlerId, Entry> t;
  return t;
}
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

// "Unit::method" out of a registered name, which spells the whole instantiation
// ("... EntryTag<Unit, &Unit::method>] ...").
std::string brief(const std::string& name) {
  const auto amp = name.rfind('&');
  if (amp == std::string::npos) return name;
  const auto end = name.find_first_of(">;]", amp);
  return name.substr(amp + 1, end == std::string::npos ? std::string::npos : end - amp - 1);
}

const char* to_string(HandlerKind kind) {
  return kind == HandlerKind::entry ? "entry method" : "reducer";
}

}  // namespace

HandlerId register_handler(std::string_view name, HandlerKind kind, std::type_index unit,
                           const void* handler) {
  const HandlerId id = hash_name(name);
  std::lock_guard lock(table_mutex());
  auto [it, inserted] = table().try_emplace(id, Entry{std::string(name), kind, unit, handler});
  if (!inserted && (it->second.name != name || it->second.handler != handler)) {
    // Different handlers under one id: a hash collision, or two types that print alike
    // (e.g. unit classes of the same name in anonymous namespaces of two files).
    print_error(detail::cat(
        "kodo: fatal: two different handlers share an id; give unit classes distinct names "
        "outside anonymous namespaces:\n  ",
        it->second.name, "\n  ", name));
    std::abort();
  }
  return id;
}

const void* find_handler(HandlerId id, HandlerKind kind, std::type_index unit,
                         std::string& problem) {
  std::lock_guard lock(table_mutex());
  const auto it = table().find(id);
  if (it == table().end()) {
    problem =
        cat("field handler is ", id, ", which names no ", to_string(kind), " of this program");
    return nullptr;
  }
  const Entry& e = it->second;
  if (e.kind != kind) {
    problem = cat("field handler names ", to_string(e.kind), " ", brief(e.name), " where ",
                  kind == HandlerKind::entry ? "an " : "a ", to_string(kind), " belongs");
    return nullptr;
  }
  if (e.unit != unit) {
    problem = cat("field handler names ", to_string(e.kind), " ", brief(e.name),
                  ", which belongs to another unit type than the collection's");
    return nullptr;
  }
  return e.handler;
}

std::string handler_name(HandlerId id) {
  std::lock_guard lock(table_mutex());
  const auto it = table().find(id);
  return it == table().end() ? std::string("<unknown>") : brief(it->second.name);
}

std::uint64_t handler_fingerprint() {
  std::lock_guard lock(table_mutex());
  std::uint64_t h = hash_name("kodo handlers");
  for (const auto& [id, e] : table()) {
    const unsigned char bytes[9] = {
        static_cast<unsigned char>(id),       static_cast<unsigned char>(id >> 8),
        static_cast<unsigned char>(id >> 16), static_cast<unsigned char>(id >> 24),
        static_cast<unsigned char>(id >> 32), static_cast<unsigned char>(id >> 40),
        static_cast<unsigned char>(id >> 48), static_cast<unsigned char>(id >> 56),
        static_cast<unsigned char>(e.kind)};
    h = hash_name(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes), h);
  }
  return h;
}

std::size_t handler_count() {
  std::lock_guard lock(table_mutex());
  return table().size();
}

}  // namespace kodo::detail
