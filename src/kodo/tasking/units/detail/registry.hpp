// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The program's table of handlers (entry methods and reducers), each under a stable id,
// with the kind of message and the unit type it serves, so that an id read from the
// wire is only ever used for what it was registered for.
//
// A handler is named by the compiler's spelling of the template instantiation that
// defines it, and its id is a 64-bit hash of that name. Ranks run the same program, so
// ids agree across processes without any exchange and regardless of the order of
// static initialisers; function addresses would not (ASLR). Registration happens
// during static initialisation, before main; the table is read-only afterwards.
// fingerprint() lets ranks check at start-up that they run the same handlers.

#include <cstdint>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>

namespace kodo::detail {

using HandlerId = std::uint64_t;

enum class HandlerKind : std::uint8_t { entry, reducer };

// Stores `handler` under the hash of `name`; aborts at start-up when two different
// names hash alike. Returns the id.
HandlerId register_handler(std::string_view name, HandlerKind kind, std::type_index unit,
                           const void* handler);

// The handler registered under `id` for `kind` and `unit`; nullptr with `problem` set
// to a sentence naming the mismatch when there is none.
const void* find_handler(HandlerId id, HandlerKind kind, std::type_index unit,
                         std::string& problem);

// The member a handler serves, "Unit::method" (for messages and traces), or "<unknown>".
std::string handler_name(HandlerId id);

// A hash of every registered handler's id: the same in every process of one program.
std::uint64_t handler_fingerprint();
std::size_t handler_count();

// The unique spelling of a template instantiation: the pretty function name carries the
// template arguments, the type name disambiguates overloads.
template <class Tag>
std::string instantiation_name() {
  return std::string(__PRETTY_FUNCTION__) + "|" + typeid(Tag).name();
}

}  // namespace kodo::detail
