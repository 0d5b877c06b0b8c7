// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/tasks/task.hpp>

#include <kodo/tasking/scheduling/detail/load_timing.hpp>
#include <kodo/tasking/tasks/detail/task_list.hpp>

#include <chrono>

namespace kodo::detail {

namespace {
// How the top-level task that ended during the resume under way ended (one scheduler
// thread per rank: resumes do not overlap).
struct Ended {
  std::exception_ptr error;
  std::string unit;
};
thread_local Ended ended;
}  // namespace

void resume_task(std::coroutine_handle<> coroutine) {
  coroutine.resume();
  if (!ended.error) return;
  const std::exception_ptr error = std::exchange(ended.error, nullptr);
  const std::string unit = std::move(ended.unit);
  std::string what;
  try {
    std::rethrow_exception(error);
  } catch (...) {
    what = what_of_current();
  }
  throw Error(cat(unit, ": its task (a coroutine entry method) ended with an exception: ", what));
}

void resume_task(TaskRecord& task, std::coroutine_handle<> coroutine) {
  CollectionBase* c = task.collection;
  if (!c) return resume_task(coroutine);
  // The resume may end the task: `task` is not used after it.
  time_for_load(*c, task.slot, [coroutine] { resume_task(coroutine); });
}

void start_task(Task task, std::string unit, TaskList& list, ChannelHost& host,
                CollectionBase* collection, std::int64_t slot) {
  const Task::Handle coroutine = std::exchange(task.coroutine_, {});
  TaskRecord& record = coroutine.promise().record;
  record.unit = std::move(unit);
  record.frame = coroutine;
  record.host = &host;
  record.collection = collection;
  record.slot = slot;
  coroutine.promise().task = &record;
  list.add(record);
  resume_task(coroutine);
}

void leave_task_list(TaskRecord& task) {
  if (task.list) task.list->remove(task);
}

std::coroutine_handle<> end_task(Task::Handle ended_task) noexcept {
  Task::promise_type& promise = ended_task.promise();
  TaskRecord& record = promise.record;
  if (record.list) record.list->remove(record);
  if (promise.error) {
    ended.error = promise.error;
    ended.unit = record.unit;
  }
  ended_task.destroy();
  return std::noop_coroutine();
}

}  // namespace kodo::detail
