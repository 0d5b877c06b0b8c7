// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kokkos' per-instance scratch, read from its internal instance: the members of
// CudaInternal and HIPInternal as Kokkos 4.6 to 4.6.99 (June 2025) name them. A renamed
// member fails to compile; a buffer Kokkos adds later would be missed: check on upgrade.
#include <kodo/backends/detail/instance_scratch.hpp>

namespace kodo::backend {

std::vector<const void*> instance_scratch([[maybe_unused]] const ExecutionSpace& space) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  const auto* in = space.impl_internal_space_instance();
  std::vector<const void*> found{in->m_scratchSpace, in->m_scratchFlags, in->m_scratchFunctor};
#if defined(KOKKOS_ENABLE_CUDA)
  found.push_back(in->m_scratchUnified);
#endif
  for (int i = 0; i < in->m_n_team_scratch; ++i) found.push_back(in->m_team_scratch_ptr[i]);
  return found;
#else
  return {};  // the host backend records nothing
#endif
}

}  // namespace kodo::backend
