// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// A work unit's state, declared once and walked both ways: written to a checkpoint and
/// restored from one (checkpoint.hpp), and sent with a unit that moves to another rank
/// (migration.hpp). A unit names each field, in order, in one member function template
/// (examples/06_checkpoint_restart.cpp):
/// @snippet 06_checkpoint_restart.cpp state
/// Fields are values (trivially copyable), contiguous Kokkos views (host or device), and
/// std::vectors and std::strings of trivially copyable values. Restoring matches them by
/// order, name, kind, element size and rank (a mismatch is an error naming the field); a
/// view keeps its allocation and must have the saved extents, unless it is a managed view
/// with no memory, which is allocated with them. A unit that keeps its state in another
/// form than it saves it asks kodo::restoring<State> which way the walk goes.

#include <type_traits>

namespace kodo {
namespace detail {
class StateReader;  // the walk that restores (unit_state_impl.hpp)
}  // namespace detail

/// Whether a state() walk restores the fields (true) or writes them (false).
template <class State>
inline constexpr bool restoring = std::is_same_v<State, detail::StateReader>;
}  // namespace kodo

// How a state() walk writes and restores the fields.
#include <kodo/tasking/units/detail/unit_state_impl.hpp>
