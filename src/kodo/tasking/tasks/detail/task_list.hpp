// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The rank's coroutine tasks (task.hpp) that have started and not ended: how many there
// are (a job is not done while one waits), what each waits for (stall reports, and the
// error of a job that goes quiet while tasks wait), and their frames, destroyed at
// shutdown if still suspended.

#include <kodo/tasking/tasks/task.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace kodo::detail {

class TaskList {
 public:
  TaskList() = default;
  ~TaskList() { destroy_all(); }
  TaskList(const TaskList&) = delete;
  TaskList& operator=(const TaskList&) = delete;

  void add(TaskRecord& task);
  void remove(TaskRecord& task);
  // Tasks started and not ended.
  std::size_t count() const { return tasks_.size(); }
  // One line per task, in the order they started: its unit, what it awaits and where.
  std::string describe() const;
  // Destroys the frame of every task still here (they will never be resumed).
  void destroy_all();

 private:
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, TaskRecord*> tasks_;  // by start order
};

}  // namespace kodo::detail
