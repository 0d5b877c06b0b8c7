// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The rank's kernel batches (kernel_batch.hpp) waiting for the end of the scheduler's
// turn: launched then, each functor type's kernels of every batch as one launch, on the
// stream of the first batch, which waits for the other batches' streams first; those
// wait for it after. Then each batch's unit goes on (its task resumes, or its callback
// runs), and what they launch in turn goes out in the same turn.

#include <kodo/tasking/tasks/kernel_batch.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace kodo::detail {

class BatchLauncher {
 public:
  // Takes `batch` (not empty) for the next launch; `then` runs after it. Throws
  // kodo::Error if the batch waits for a launch already.
  void add(KernelBatch& batch, std::function<void()> then);
  bool pending() const { return !waiting_.empty(); }
  std::size_t waiting() const { return waiting_.size(); }
  // Launches every waiting batch and runs what follows them, until none waits.
  void launch_all();
  // Kernels launched and launches made so far (one per functor type and turn).
  std::size_t kernels() const { return kernels_; }
  std::size_t launches() const { return launches_; }
  // Forgets the waiting batches (their tasks are being destroyed).
  void drop() { waiting_.clear(); }
  // Each functor type's kernels of `batches` as one launch on `space`, types in the order
  // of their first kernels; the batches are emptied. `all` and `group` are scratch
  // vectors (kept by the caller for their capacity). Returns the launches made.
  static std::size_t launch_together(const ExecutionSpace& space,
                                     const std::vector<KernelBatch*>& batches,
                                     std::vector<BatchKernel*>& all,
                                     std::vector<BatchKernel*>& group);

 private:
  struct Waiting {
    KernelBatch* batch;
    std::function<void()> then;
  };
  void launch(std::vector<Waiting>& batches);
  std::vector<Waiting> waiting_;
  std::vector<Waiting> launching_;     // launch_all's (reused)
  std::vector<BatchKernel*> all_;      // every batch's kernels (reused)
  std::vector<BatchKernel*> group_;    // one functor type's kernels (reused)
  std::vector<Stream*> streams_;       // the batches' streams but the first (reused)
  std::vector<KernelBatch*> batches_;  // launch's batches (reused)
  std::size_t kernels_ = 0, launches_ = 0;
};

}  // namespace kodo::detail
