// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/backends/placement.hpp>

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/stream.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/settings.hpp>

#include <cstdlib>
#include <sstream>

#if defined(KODO_HAVE_HWLOC)
#include <hwloc.h>
#endif

namespace kodo {
namespace {

#if defined(KODO_HAVE_HWLOC)
void read_binding(Placement& p) {
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return;
  if (hwloc_topology_load(topology) == 0) {
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topology, cpus, HWLOC_CPUBIND_PROCESS) == 0) {
      char* text = nullptr;
      hwloc_bitmap_list_asprintf(&text, cpus);
      if (text) p.cpus = text;
      std::free(text);
      hwloc_cpuset_to_nodeset(topology, cpus, nodes);
      text = nullptr;
      hwloc_bitmap_list_asprintf(&text, nodes);
      if (text) p.numa = text;
      std::free(text);
    }
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(nodes);
  }
  hwloc_topology_destroy(topology);
}
#else
void read_binding(Placement&) {}
#endif

}  // namespace

Placement detail::place_rank(MPI_Comm comm, int device) {
  Placement p;
  MPI_Comm node;
  KODO_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  KODO_MPI_CHECK(MPI_Comm_rank(node, &p.local_rank));
  KODO_MPI_CHECK(MPI_Comm_size(node, &p.local_ranks));
  read_binding(p);

  std::string problem;
  const bool device_build = !host_build;
  // KODO_DEVICE says what the user expects: "gpu", "host" or "auto" (the default: GPUs
  // when the build has a device backend).
  std::string wanted;
  try {
    wanted = detail::choice_setting("KODO_DEVICE");
  } catch (const Error& e) {
    problem = e.what();
  }
  if (wanted == "gpu" && !device_build) {
    problem =
        "KODO_DEVICE=gpu, but this kodo build has no device backend: its Kokkos has "
        "neither CUDA nor HIP (rebuild against a CUDA or HIP Kokkos)";
  } else if (wanted == "host" && device_build) {
    problem = std::string("KODO_DEVICE=host, but this kodo build runs on ") + backend::name() +
              " GPUs (use a build against a host-only Kokkos)";
  }
  // The GPUs this rank sees, as a key the node's ranks compare (0: none, or no need).
  int count = 0;
  std::uint64_t key = 0;
  if (problem.empty() && device_build) {
    try {
      count = backend::device_count();
      std::string ids;
      for (int d = 0; d < count; ++d) ids += backend::device_bus_id(d) + ";";
      key = detail::hash_name(ids);
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  // Collective on every rank of the node, whatever happened above.
  std::vector<std::uint64_t> sets(p.local_ranks);
  KODO_MPI_CHECK(MPI_Allgather(&key, 1, MPI_UINT64_T, sets.data(), 1, MPI_UINT64_T, node));
  if (problem.empty() && device_build) {
    try {
      const bool sharing = detail::flag_setting("KODO_SHARE_GPUS");
      if (count == 0) {
        problem = std::string("no GPU is visible to this process, but kodo was built for ") +
                  backend::name();
      } else {
        p.device = device >= 0 ? device
                               : detail::assign_device(sets, p.local_rank, count, sharing, problem);
        if (p.device >= 0) {
          backend::select_device(p.device);
          p.device_name = backend::device_name(p.device);
        }
      }
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  // Ranks sharing a GPU are time-sliced by it: a kernel that waits for another rank holds
  // the GPU for a whole slice (the channels then wait on the host).
  std::vector<int> devices(p.local_ranks);
  KODO_MPI_CHECK(MPI_Allgather(&p.device, 1, MPI_INT, devices.data(), 1, MPI_INT, node));
  // The same GPU: the same index among the same visible GPUs (ranks given a GPU each by
  // the launcher all see theirs as GPU 0, but see different sets).
  for (int r = 0; r < p.local_ranks; ++r)
    p.shares_device = p.shares_device || (r != p.local_rank && p.device >= 0 &&
                                          sets[r] == sets[p.local_rank] && devices[r] == p.device);
  MPI_Comm_free(&node);
  detail::agree_on_failure(comm, problem, "could not be placed on a GPU");
  return p;
}

namespace detail {

int assign_device(const std::vector<std::uint64_t>& sets, int me, int count, bool sharing,
                  std::string& problem) {
  int position = 0, group = 0;  // among the ranks that see the same GPUs as `me`
  for (int r = 0; r < static_cast<int>(sets.size()); ++r) {
    if (sets[r] != sets[me]) continue;
    if (r < me) ++position;
    ++group;
  }
  if (group > count && !sharing) {
    problem = std::to_string(group) + " ranks of this node see the same " + std::to_string(count) +
              " GPU(s); kodo runs one rank per GPU (set KODO_SHARE_GPUS=1 to share)";
    return -1;
  }
  return position % count;
}

}  // namespace detail

std::string describe(const Placement& p, int rank) {
  std::ostringstream os;
  os << "rank " << rank << " (local " << p.local_rank << " of " << p.local_ranks << "): ";
  if (p.device >= 0)
    os << "GPU " << p.device << " (" << p.device_name << ")";
  else
    os << "host backend";
  os << ", cpus " << p.cpus << ", NUMA " << p.numa;
  return os.str();
}

}  // namespace kodo
