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
/// The kernels of a batch must not depend on each other: they run at once, with other
/// units' batches. Work enqueued on the stream before the launch comes before them, and
/// work enqueued after it (once the task goes on) comes after them. docs/concepts.md
/// ("Kernels launched together") says when it pays.

#include <kodo/backends/stream.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace kodo {

namespace detail {

class BatchLauncher;  // the rank's batches (detail/batch_launcher.hpp)

// One kernel of a batch, its functor's type erased; launch_group launches any number of
// kernels of that type (the same `type`) on one instance.
struct BatchKernel {
  using LaunchGroup = void (*)(const ExecutionSpace& space, BatchKernel* const* kernels,
                               std::size_t count);
  virtual ~BatchKernel() = default;
  const void* type = nullptr;  // one address per functor type
  LaunchGroup launch_group = nullptr;
  const char* label = "";
  std::int64_t begin = 0, end = 0;
};

template <class F>
struct BatchKernelOf final : BatchKernel {
  explicit BatchKernelOf(const F& f) : functor(f) {}
  F functor;
};

template <class Policy, class F>
inline constexpr char batch_kernel_type = 0;

// Kernels of one functor type as one: index i runs kernel k's functor at its own index,
// where k's indices start at starts[k] (a search over at most kCapacity entries). The
// functors travel in the launch's parameters, so nothing is copied to the device by hand
// and a recorded launch holds them; the launch hint keeps Kokkos from passing them
// through constant memory (kodo's recordings cannot hold that).
template <class F>
struct KernelsAsOne {
  // Within Kokkos' 4 KiB of kernel parameters (CUDA), with room for the policy.
  static constexpr int kCapacity =
      static_cast<int>(std::min<std::size_t>(64, 3200 / (sizeof(F) + 2 * sizeof(std::int64_t))));
  static_assert(kCapacity >= 2, "kodo::KernelBatch: functor too large to launch together");
  union Slot {
    KOKKOS_FUNCTION Slot() {}
    KOKKOS_FUNCTION ~Slot() {}
    F f;
  };
  Slot slots[kCapacity];
  std::int64_t starts[kCapacity + 1];
  std::int64_t begins[kCapacity];
  int count = 0;

  KernelsAsOne() { starts[0] = 0; }
  KOKKOS_FUNCTION KernelsAsOne(const KernelsAsOne& other) : count(other.count) {
    for (int k = 0; k < count; ++k) {
      new (&slots[k].f) F(other.slots[k].f);
      starts[k] = other.starts[k];
      begins[k] = other.begins[k];
    }
    starts[count] = other.starts[count];
  }
  KernelsAsOne& operator=(const KernelsAsOne&) = delete;
  KOKKOS_FUNCTION ~KernelsAsOne() {
    for (int k = 0; k < count; ++k) slots[k].f.~F();
  }
  void add(const F& f, std::int64_t begin, std::int64_t end) {
    new (&slots[count].f) F(f);
    begins[count] = begin;
    starts[count + 1] = starts[count] + (end - begin);
    ++count;
  }
  std::int64_t size() const { return count == 0 ? 0 : starts[count]; }

  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    int lo = 0, hi = count;
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (starts[mid] <= i)
        lo = mid;
      else
        hi = mid;
    }
    slots[lo].f(begins[lo] + (i - starts[lo]));
  }
};

// Launches kernels of functor type F added with policies of type Policy: one alone as
// the unit would have launched it, more as one kernel with the policy's launch bounds.
template <class Policy, class F>
void launch_kernels_of(const ExecutionSpace& space, BatchKernel* const* kernels,
                       std::size_t count) {
  using Together = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>,
                                       typename Policy::launch_bounds>;
  auto of = [&](std::size_t k) -> BatchKernelOf<F>& {
    return *static_cast<BatchKernelOf<F>*>(kernels[k]);
  };
  if (count == 1) {
    using Index = typename Policy::index_type;
    Kokkos::parallel_for(of(0).label,
                         Policy(space, static_cast<Index>(of(0).begin),
                                static_cast<Index>(of(0).end)),
                         of(0).functor);
    return;
  }
  for (std::size_t first = 0; first < count;) {
    KernelsAsOne<F> one;
    for (; first < count && one.count < KernelsAsOne<F>::kCapacity; ++first)
      if (of(first).end > of(first).begin)
        one.add(of(first).functor, of(first).begin, of(first).end);
    if (one.size() == 0) continue;
    Kokkos::parallel_for(
        of(0).label,
        Kokkos::Experimental::require(Together(space, 0, one.size()),
                                      Kokkos::Experimental::WorkItemProperty::HintLightWeight),
        one);
  }
}

}  // namespace detail

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
  /// string: it is read at the launch).
  template <class F>
  void parallel_for(const char* label, std::int64_t begin, std::int64_t end, const F& functor) {
    parallel_for(label,
                 Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(begin, end),
                 functor);
  }
  /// The same with a Kokkos::RangePolicy of kodo's execution space, whose range and launch
  /// bounds the kernel takes (it runs on the batch's stream, whatever instance the policy
  /// names).
  template <class... Traits, class F>
  void parallel_for(const char* label, const Kokkos::RangePolicy<Traits...>& policy,
                    const F& functor) {
    using Policy = Kokkos::RangePolicy<Traits...>;
    static_assert(std::is_same_v<typename Policy::execution_space, ExecutionSpace>,
                  "kodo::KernelBatch: the policy's execution space is not kodo::ExecutionSpace");
    static_assert(std::is_void_v<typename Policy::work_tag>,
                  "kodo::KernelBatch: a policy with a work tag cannot be launched together");
    auto kernel = std::make_unique<detail::BatchKernelOf<F>>(functor);
    kernel->type = &detail::batch_kernel_type<Policy, F>;
    kernel->launch_group = &detail::launch_kernels_of<Policy, F>;
    kernel->label = label;
    kernel->begin = static_cast<std::int64_t>(policy.begin());
    kernel->end = std::max(kernel->begin, static_cast<std::int64_t>(policy.end()));
    kernels_.push_back(std::move(kernel));
  }

  /// The stream the kernels are ordered on.
  Stream& stream() const { return *stream_; }
  /// Whether no kernel waits for a launch.
  bool empty() const { return kernels_.empty(); }

 private:
  friend class detail::BatchLauncher;  // takes the kernels added since the last launch

  Stream* stream_;
  std::vector<std::unique_ptr<detail::BatchKernel>> kernels_;
};

}  // namespace kodo
