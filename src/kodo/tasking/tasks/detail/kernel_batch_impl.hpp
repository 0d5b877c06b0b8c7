// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What KernelBatch keeps of each kernel, and the kernel that runs many kernels of one
// functor type as one (tasking/tasks/kernel_batch.hpp). Installed: the batch's templates
// instantiate these in the user's program.

#include <kodo/backends/stream.hpp>
#include <kodo/core/detail/recycled.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace kodo::detail {

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

// (Its storage is recycled: units add kernels every step.)
template <class F>
struct BatchKernelOf final : BatchKernel, Recycled<BatchKernelOf<F>> {
  template <class G>
  explicit BatchKernelOf(G&& f) : functor(std::forward<G>(f)) {}
  F functor;
};

// A functor's bytes, launched in its place. Kokkos copies what it launches two or more
// times on the host, and a copy of a functor costs its views' reference counts and, for a
// CUDA __host__ __device__ lambda, a heap allocation: most of a batch's launch, measured
// (docs/performance.md). A copy of the bytes costs neither. The functor itself (its batch's)
// outlives the launch call, which is all the host reads of it; the device reads its own
// copy, made from the launch's parameters, as it does for any kernel.
template <class F>
struct FunctorImage {
  alignas(F) unsigned char bytes[sizeof(F)];
  FunctorImage() = default;
  explicit FunctorImage(const F& f) { std::memcpy(bytes, static_cast<const void*>(&f), sizeof(F)); }
  KOKKOS_FUNCTION const F& functor() const { return *reinterpret_cast<const F*>(bytes); }
};

// One kernel launched with its own policy, through its image.
template <class Policy, class F>
struct AloneAsImage {
  FunctorImage<F> image;
  KOKKOS_FUNCTION void operator()(typename Policy::member_type i) const { image.functor()(i); }
};

template <class Policy, class F>
inline constexpr char batch_kernel_type = 0;

// The flat range a kernel of Policy (a tagged RangePolicy, an MDRangePolicy) is launched
// on once its functor is wrapped below: its launch bounds kept.
template <class Policy>
using FlatPolicyOf = Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>,
                                         typename Policy::launch_bounds>;

// A functor of a tagged range: called with its tag and the policy's index type.
template <class Policy, class F>
struct Tagged {
  F f;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    f(typename Policy::work_tag{}, static_cast<typename Policy::index_type>(i));
  }
};

// A functor of an MDRangePolicy's box, called at the point flat index i names: the
// policy's inner direction runs fastest, as Kokkos iterates within a tile.
template <class Policy, class F>
struct BoxPoints {
  static constexpr int rank = Policy::rank;
  static constexpr bool left_fastest = Policy::inner_direction == Kokkos::Iterate::Left;
  using Index = typename Policy::index_type;
  using Tag = typename Policy::work_tag;
  F f;
  std::int64_t lower[rank], extent[rank];

  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    Index at[rank];
    for (int k = 0; k < rank; ++k) {
      const int d = left_fastest ? k : rank - 1 - k;
      at[d] = static_cast<Index>(lower[d] + i % extent[d]);
      i /= extent[d];
    }
    call(at, std::make_integer_sequence<int, rank>{});
  }
  template <int... D>
  KOKKOS_FUNCTION void call(const Index* at, std::integer_sequence<int, D...>) const {
    if constexpr (std::is_void_v<Tag>)
      f(at[D]...);
    else
      f(Tag{}, at[D]...);
  }
};

// Kernels of one functor type as one: index i runs kernel k's functor at its own index,
// where k's indices start at starts[k] (a search over at most kCapacity entries). The
// functors' images travel in the launch's parameters, so nothing is copied to the device
// by hand and a recorded launch holds them; the launch hint keeps Kokkos from passing them
// through constant memory (kodo's recordings cannot hold that).
template <class F>
struct KernelsAsOne {
  // Within Kokkos' 4 KiB of kernel parameters (CUDA), with room for the policy.
  static constexpr int kCapacity =
      static_cast<int>(std::min<std::size_t>(64, 3200 / (sizeof(F) + 2 * sizeof(std::int64_t))));
  static_assert(kCapacity >= 2, "kodo::KernelBatch: functor too large to launch together");
  FunctorImage<F> images[kCapacity];
  std::int64_t starts[kCapacity + 1];
  std::int64_t begins[kCapacity];
  int count = 0;

  KernelsAsOne() { starts[0] = 0; }
  void add(const F& f, std::int64_t begin, std::int64_t end) {
    images[count] = FunctorImage<F>(f);
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
    images[lo].functor()(begins[lo] + (i - starts[lo]));
  }
};

// Launches kernels of functor type F added with policies of type Policy: one alone as
// the unit would have launched it, more as one kernel with the policy's launch bounds.
// Either way the functors travel in the launch's parameters (Kokkos' light-weight hint):
// a functor over 512 bytes would otherwise go through constant memory, which a recording
// cannot hold, and whether it did would depend on how many units launch together.
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
    Kokkos::parallel_for(
        of(0).label,
        Kokkos::Experimental::require(Policy(space, static_cast<Index>(of(0).begin),
                                             static_cast<Index>(of(0).end)),
                                      Kokkos::Experimental::WorkItemProperty::HintLightWeight),
        AloneAsImage<Policy, F>{FunctorImage<F>(of(0).functor)});
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

}  // namespace kodo::detail
