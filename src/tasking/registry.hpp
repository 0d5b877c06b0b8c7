#pragma once
// Process-wide registries of handlers (entry methods, reducers) keyed by a stable id.
//
// A handler is named by the compiler's spelling of the template instantiation that
// defines it, and its id is a 64-bit hash of that name. Ranks run the same program, so
// ids agree across processes without any start-up exchange and regardless of the
// order in which static initialisers run; function addresses would not (ASLR).

#include <cstdint>
#include <string>
#include <string_view>
#include <typeinfo>

namespace kodo::detail {

using HandlerId = std::uint64_t;

std::uint64_t hash_name(std::string_view name);

// Stores `handler` under the hash of `name`; aborts at start-up when two different
// names hash alike. Returns the id.
HandlerId register_handler(std::string_view name, const void* handler);

// The handler registered under `id`, or nullptr.
const void* find_handler(HandlerId id);

// The registered name of `id` (for error messages), or "<unknown>".
std::string handler_name(HandlerId id);

// The unique spelling of a template instantiation: the pretty function name carries the
// template arguments, the type name disambiguates overloads.
template <class Tag>
std::string instantiation_name() {
  return std::string(__PRETTY_FUNCTION__) + "|" + typeid(Tag).name();
}

}  // namespace kodo::detail
