// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/tasks/detail/task_list.hpp>

#include <sstream>
#include <vector>

namespace kodo::detail {

void TaskList::add(TaskRecord& task) {
  task.list = this;
  task.key = next_++;
  tasks_[task.key] = &task;
}

void TaskList::remove(TaskRecord& task) {
  tasks_.erase(task.key);
  task.list = nullptr;
}

std::string TaskList::describe() const {
  std::ostringstream os;
  for (const auto& [key, task] : tasks_) {
    os << "\n  " << task->unit << ": its task awaits ";
    if (!task->awaiting) {
      os << "nothing (it is running)";
      continue;
    }
    os << task->awaiting;
    if (task->number >= 0) os << ' ' << task->number;
    os << " at " << task->where.file_name() << ':' << task->where.line();
  }
  return os.str();
}

void TaskList::destroy_all() {
  std::vector<std::coroutine_handle<>> frames;
  for (auto& [key, task] : tasks_) {
    task->list = nullptr;
    frames.push_back(task->frame);
  }
  tasks_.clear();
  for (auto frame : frames) frame.destroy();
}

}  // namespace kodo::detail
