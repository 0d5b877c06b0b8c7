// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What tasking/tasks/task.hpp needs before kodo::Task: the record a started task keeps (its
// promise holds one), the calls that start and resume tasks (task.cpp), and the
// operations its awaitables are made of (defined in task_impl.hpp).

#include <coroutine>
#include <cstdint>
#include <source_location>
#include <string>

namespace kodo {
class Task;
}  // namespace kodo

namespace kodo::detail {

class ChannelHost;     // comm/channel.hpp
class CollectionBase;  // tasking/units/detail/collection_base.hpp
class TaskList;        // the rank's tasks (task_list.hpp)
// What a task may await besides a Task, and the operations task.hpp's functions make
// (task_impl.hpp).
template <class Op>
class Awaitable;
template <class V>
struct ChannelReceive;
template <class V>
struct ChannelSend;
template <class... Ops>
struct AllOf;
template <class Op>
struct AllOfRange;
template <class A>
inline constexpr bool never = false;

// A started task: its unit, where it is kept, and what it waits for while suspended.
// The top-level coroutine holds it; the coroutines it awaits share it.
struct TaskRecord {
  std::string unit;               // "unit (1,0,0) of collection 0"
  std::coroutine_handle<> frame;  // the top-level coroutine
  TaskList* list = nullptr;
  ChannelHost* host = nullptr;
  std::uint64_t key = 0;  // its place in the list
  // While suspended: what it awaits, a number that goes with it (-1: none), and where.
  const char* awaiting = nullptr;
  std::int64_t number = -1;
  std::source_location where;
  // The unit's collection and slot, whose load its resumes add to (balance.hpp), or null.
  CollectionBase* collection = nullptr;
  std::int64_t slot = -1;
};

// Resumes a task's coroutine from the scheduler loop; throws kodo::Error naming the unit
// when the task ended by an exception.
void resume_task(std::coroutine_handle<> coroutine);
// The same for `task` resumed from the scheduler loop: the time it runs is its unit's
// measured load, where the collection's loads are measured.
void resume_task(TaskRecord& task, std::coroutine_handle<> coroutine);
// Starts `task` as a task of `unit` (its entry method returned it) and runs it until it
// first waits (work_unit.hpp calls this for entry methods); `collection` and `slot`: the
// unit's (null: no load is measured).
void start_task(Task task, std::string unit, TaskList& list, ChannelHost& host,
                CollectionBase* collection = nullptr, std::int64_t slot = -1);
template <class U>
void start_unit_task(U& unit, Task task);  // defined in work_unit_impl.hpp
// The suspended `task` no longer counts as waiting (a balance point keeps its frame and
// destroys it: WorkUnit::balance_point).
void leave_task_list(TaskRecord& task);

}  // namespace kodo::detail
