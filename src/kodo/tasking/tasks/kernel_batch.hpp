// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// kodo::KernelBatch: a unit's independent kernels on one stream, launched together with
/// the same kernels of the rank's other units, in one launch each (horizontal fusion):
/// eight units' face packs are one kernel, not eight times six. In a task:
/// ```
///   kodo::KernelBatch packs(stream);
///   for (int f : faces) packs.parallel_for("pack", 0, face_size(f), PackFace{...});
///   co_await launch(packs);   // WorkUnit::launch; launch(packs, then) in an entry method
/// ```
/// Kernels may also come with a RangePolicy or an MDRangePolicy, with or without a work tag,
/// as a Kokkos code launches them.
/// The kernels of a batch must not depend on each other: they run at once, with other
/// units' batches. Work enqueued on the stream before the launch comes before them, and
/// work enqueued after it (once the task goes on) comes after them. docs/concepts.md
/// ("Kernels launched together") says when it pays.

#include <kodo/backends/stream.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/tasks/detail/kernel_batch_impl.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace kodo {

/// A unit's independent kernels on one stream, launched with the same kernels of the
/// rank's other units by WorkUnit::launch (see this file's description). Reusable: a
/// launch empties it.
class KernelBatch {
 public:
  /// Kernels for `stream` (the unit's).
  explicit KernelBatch(Stream& stream) : stream_(&stream) {}
  KernelBatch(const KernelBatch&) = delete;
  KernelBatch& operator=(const KernelBatch&) = delete;

  /// Adds a kernel: `functor(i)` for i in [begin, end), as Kokkos::parallel_for with a
  /// RangePolicy on the stream would run it; `label` names it to profilers (a static
  /// string: it is read at the launch). A functor made in the call is moved in, one passed
  /// by name copied once; the launch copies neither.
  template <class F>
  void parallel_for(const char* label, std::int64_t begin, std::int64_t end, F&& functor) {
    // (No policy made here: one without an instance default-constructs the execution
    // space, a heap allocation in Kokkos' CUDA backend. Kokkos' own check, then:)
    if (end < begin)
      throw Error(detail::cat("kodo::KernelBatch::parallel_for(\"", label, "\"): the range ends (",
                              end, ") before it begins (", begin, ")"));
    add<Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>>(
        label, begin, end, std::forward<F>(functor));
  }
  /// The same with a Kokkos::RangePolicy of kodo's execution space, whose range, launch
  /// bounds and work tag the kernel takes (`functor(Tag{}, i)` with a tag; it runs on the
  /// batch's stream, whatever instance the policy names).
  template <class... Traits, class F>
  void parallel_for(const char* label, const Kokkos::RangePolicy<Traits...>& policy, F&& functor) {
    using Policy = Kokkos::RangePolicy<Traits...>;
    using Functor = std::remove_cvref_t<F>;
    static_assert(std::is_same_v<typename Policy::execution_space, ExecutionSpace>,
                  "kodo::KernelBatch: the policy's execution space is not kodo::ExecutionSpace");
    const auto begin = static_cast<std::int64_t>(policy.begin());
    const auto end = static_cast<std::int64_t>(policy.end());
    if constexpr (std::is_void_v<typename Policy::work_tag>)
      add<Policy>(label, begin, end, std::forward<F>(functor));
    else
      add<detail::FlatPolicyOf<Policy>>(label, begin, end,
                                        detail::Tagged<Policy, Functor>{std::forward<F>(functor)});
  }
  /// The same with a Kokkos::MDRangePolicy of kodo's execution space (ranks 2-6, a work
  /// tag or none): `functor([Tag{},] i0, i1, ...)` at every point of the policy's box,
  /// taken as one flat range in the order the policy's inner direction gives (its tiles
  /// are not used: a flat launch is what stencils want on GPUs).
  template <class... Traits, class F>
  void parallel_for(const char* label, const Kokkos::MDRangePolicy<Traits...>& policy,
                    F&& functor) {
    using Policy = Kokkos::MDRangePolicy<Traits...>;
    static_assert(std::is_same_v<typename Policy::execution_space, ExecutionSpace>,
                  "kodo::KernelBatch: the policy's execution space is not kodo::ExecutionSpace");
    detail::BoxPoints<Policy, std::remove_cvref_t<F>> points{std::forward<F>(functor), {}, {}};
    std::int64_t size = 1;
    for (int d = 0; d < Policy::rank; ++d) {
      points.lower[d] = static_cast<std::int64_t>(policy.m_lower[d]);
      points.extent[d] =
          std::max<std::int64_t>(0, static_cast<std::int64_t>(policy.m_upper[d]) - points.lower[d]);
      size *= points.extent[d];
    }
    add<detail::FlatPolicyOf<Policy>>(label, 0, size, std::move(points));
  }

  /// The stream the kernels are ordered on.
  Stream& stream() const { return *stream_; }
  /// Whether no kernel waits for a launch.
  bool empty() const { return kernels_.empty(); }

 private:
  friend class detail::BatchLauncher;  // takes the kernels added since the last launch

  // A kernel of `functor(i)` for i in [begin, end), launched alone with Policy. A functor
  // passed as a temporary (a lambda written in the call) is moved in, not copied: a copy of
  // a CUDA __host__ __device__ lambda allocates.
  template <class Policy, class F>
  void add(const char* label, std::int64_t begin, std::int64_t end, F&& functor) {
    using Functor = std::remove_cvref_t<F>;
    auto kernel = std::make_unique<detail::BatchKernelOf<Functor>>(std::forward<F>(functor));
    kernel->type = &detail::batch_kernel_type<Policy, Functor>;
    kernel->launch_group = &detail::launch_kernels_of<Policy, Functor>;
    kernel->label = label;
    kernel->begin = begin;
    kernel->end = std::max(begin, end);
    kernels_.push_back(std::move(kernel));
  }

  Stream* stream_;
  std::vector<std::unique_ptr<detail::BatchKernel>,
              detail::RecycledAllocator<std::unique_ptr<detail::BatchKernel>>>
      kernels_;  // (a batch made each step grows it again)
};

}  // namespace kodo
