// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/tasks/detail/batch_launcher.hpp>

#include <kodo/core/error.hpp>

#include <algorithm>

namespace kodo::detail {

void BatchLauncher::add(KernelBatch& batch, std::function<void()> then) {
  for (const auto& w : waiting_)
    if (w.batch == &batch) throw Error("a kodo::KernelBatch was launched twice before it ran");
  waiting_.push_back({&batch, std::move(then)});
}

void BatchLauncher::launch_all() {
  // What runs after a launch may add batches again (a task's next step): they go out
  // in the next round of the same turn.
  std::vector<Waiting> batches;
  batches.swap(launching_);  // (kept between turns for its capacity)
  while (!waiting_.empty()) {
    batches.clear();
    batches.swap(waiting_);
    launch(batches);
    for (auto& b : batches) b.then();
  }
  batches.clear();
  launching_.swap(batches);
}

void BatchLauncher::launch(std::vector<Waiting>& batches) {
  Stream& on = batches.front().batch->stream();
  streams_.clear();
  for (const auto& b : batches) {
    Stream* s = &b.batch->stream();
    if (s != &on && std::find(streams_.begin(), streams_.end(), s) == streams_.end())
      streams_.push_back(s);
  }
  for (Stream* s : streams_) on.wait_for(*s);
  batches_.clear();
  std::size_t kernels = 0;
  for (auto& b : batches) {
    batches_.push_back(b.batch);
    kernels += b.batch->kernels_.size();
  }
  launches_ += launch_together(on.space(), batches_, all_, group_);
  kernels_ += kernels;
  for (Stream* s : streams_) s->wait_for(on);
}

std::size_t BatchLauncher::launch_together(const ExecutionSpace& space,
                                           const std::vector<KernelBatch*>& batches,
                                           std::vector<BatchKernel*>& all,
                                           std::vector<BatchKernel*>& group) {
  all.clear();
  for (KernelBatch* b : batches)
    for (auto& k : b->kernels_) all.push_back(k.get());
  std::size_t launches = 0;
  for (std::size_t first = 0; first < all.size(); ++first) {
    if (!all[first]) continue;
    const void* type = all[first]->type;
    group.clear();
    for (std::size_t k = first; k < all.size(); ++k)
      if (all[k] && all[k]->type == type) {
        group.push_back(all[k]);
        all[k] = nullptr;
      }
    group.front()->launch_group(space, group.data(), group.size());
    ++launches;
  }
  for (KernelBatch* b : batches) b->kernels_.clear();
  return launches;
}

}  // namespace kodo::detail
