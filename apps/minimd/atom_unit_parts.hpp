// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What the files of AtomUnit share. atom_unit.cpp: the set-up, the main program's entry
// methods, checkpoints and messages; atom_unit_steps.cpp: the steps (a coroutine);
// atom_unit_programs.cpp: the step program and the reneighboring program.

#include "atom_unit.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace minimd {

inline constexpr const char* kind_names[] = {"ghost positions", "ghost forces", "migrating atoms",
                                             "new ghosts"};

// A capacity with room to grow, within the int indices of a unit.
int room_for(std::int64_t atoms, const char* what);

template <class V>
void grow_flat(V& view, std::size_t size, const char* label) {
  if (view.size() >= size) return;
  view =
      V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), size + size / 5 + 64);
}

}  // namespace minimd
