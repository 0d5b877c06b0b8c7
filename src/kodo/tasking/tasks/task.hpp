// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Coroutine units: an entry method may be a C++20 coroutine returning kodo::Task, written
/// as the loop of the MPI program it ports, the waits where the MPI calls were
/// (examples/08_coroutine_loop.cpp):
/// @snippet 08_coroutine_loop.cpp solve
/// A task runs until it awaits something not done yet; the scheduler loop resumes it once
/// it is, with no thread per unit and no blocking of the rank. It awaits kodo's awaitables
/// only: kodo::receive, kodo::send, kodo::when_all, another kodo::Task, and those of WorkUnit
/// (when_done, launch, all_reduce, balance_point), AwaitableRing and Inbox. Its parameters
/// are copied into the coroutine, so it takes them by value. What each awaitable gives,
/// and how a job ends whose tasks still wait: docs/concepts.md, "Tasks: units written as
/// loops".

#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/serialize.hpp>
#include <kodo/core/detail/recycled.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/tasks/detail/task_record.hpp>
#include <kodo/tasking/tasks/kernel_batch.hpp>
#include <kodo/tasking/units/detail/collection_base.hpp>

#include <coroutine>
#include <cstdint>
#include <exception>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kodo {

class Task;

/// What all_reduce gives: the combined value, and the number of the round it closed (a
/// unit's rounds are numbered 0, 1, 2, ... in the order it contributes, whichever way).
template <class T>
struct Reduced {
  T value;              ///< the combined value
  std::uint64_t round;  ///< the round it closed
};

/// A coroutine's type for a unit's entry method (above) and for the coroutines a task
/// awaits. Lazy: a Task runs when started as an entry method or when awaited.
class [[nodiscard]] Task {
 public:
  /// @cond
  // C++'s coroutine machinery (the promise type and its handle), which programs never use.
  struct promise_type;
  using Handle = std::coroutine_handle<promise_type>;

  struct promise_type {
    detail::TaskRecord* task = nullptr;    ///< the top-level task's record
    detail::TaskRecord record;             ///< kept here when this coroutine is the top level
    std::coroutine_handle<> continuation;  ///< the coroutine awaiting this one, if any
    std::exception_ptr error;

    // Coroutine frames (a task's, each awaited sub-task's) in recycled storage: a loop
    // of tasks makes and ends some every step.
    static void* operator new(std::size_t bytes) { return detail::recycled_take(bytes); }
    static void operator delete(void* frame, std::size_t bytes) noexcept {
      detail::recycled_give(frame, bytes);
    }
    Task get_return_object() noexcept { return Task(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(Handle ended) noexcept;
      void await_resume() noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { error = std::current_exception(); }
    /// Only kodo's awaitables: anything else would leave the task to a resumer the
    /// scheduler does not know (or to none), and reports unable to say what it awaits.
    template <class Op>
    detail::Awaitable<Op>& await_transform(detail::Awaitable<Op>& operation) noexcept {
      return operation;
    }
    template <class Op>
    detail::Awaitable<Op>&& await_transform(detail::Awaitable<Op>&& operation) noexcept {
      return std::move(operation);
    }
    Task& await_transform(Task& task) noexcept { return task; }
    Task&& await_transform(Task&& task) noexcept { return std::move(task); }
    template <class A>
    A&& await_transform(A&& other) noexcept {
      static_assert(
          detail::never<A>,
          "kodo: a kodo::Task awaits kodo::receive, when_done(stream), launch(batch), all_reduce, "
          "balance_point, AwaitableRing::transfer, Inbox::take, kodo::when_all and "
          "other kodo::Tasks only");
      return std::forward<A>(other);
    }
  };
  /// @endcond

  /// Moves the task; `other` then holds none.
  ///@{
  Task(Task&& other) noexcept : coroutine_(std::exchange(other.coroutine_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      if (coroutine_) coroutine_.destroy();
      coroutine_ = std::exchange(other.coroutine_, {});
    }
    return *this;
  }
  ///@}
  ~Task() {
    if (coroutine_) coroutine_.destroy();
  }

  /// Awaited by a task: runs now; the awaiting task goes on once it has ended (awaited
  /// again, it has ended already).
  ///@{
  bool await_ready() const noexcept { return !coroutine_ || coroutine_.done(); }
  std::coroutine_handle<> await_suspend(Handle awaiting) noexcept {
    coroutine_.promise().task = awaiting.promise().task;
    coroutine_.promise().continuation = awaiting;
    return coroutine_;
  }
  void await_resume() const {
    if (coroutine_ && coroutine_.promise().error)
      std::rethrow_exception(coroutine_.promise().error);
  }
  ///@}

 private:
  friend void detail::start_task(Task, std::string, detail::TaskList&, detail::ChannelHost&,
                                 CollectionBase*, std::int64_t);
  explicit Task(Handle coroutine) : coroutine_(coroutine) {}
  Handle coroutine_;
};

/// Awaited in a task: the peer's next send on `channel`, into `into` (which must be idle
/// on the device, as for Channel::recv); gives the elements that arrived.
template <class V>
auto receive(Channel& channel, const V& into,
             std::source_location where = std::source_location::current()) {
  return detail::Awaitable<detail::ChannelReceive<V>>({&channel, into, where});
}

/// Awaited in a task: a send of `data` on `channel`, made when awaited, as Channel::send
/// makes it (once the work enqueued on the channel's stream so far is done); the task goes
/// on once `data` may be written again (the send's `sent`), as an MPI_Wait on an MPI_Isend
/// would. Several at once: kodo::when_all.
template <class V>
auto send(Channel& channel, const V& data,
          std::source_location where = std::source_location::current()) {
  return detail::Awaitable<detail::ChannelSend<V>>({&channel, data, where});
}

/// Awaited in a task: every operation given, at once; their results as a tuple, in order
/// (std::monostate for one that gives none).
template <class... Ops>
  requires(sizeof...(Ops) > 0)
auto when_all(detail::Awaitable<Ops>&&... operations) {
  return detail::Awaitable<detail::AllOf<Ops...>>(
      detail::AllOf<Ops...>(std::tuple<Ops...>(std::move(operations.operation())...)));
}

/// Awaited in a task: every operation of a run-time number of one kind at once (a box's
/// 0 to 6 neighbours' faces); their results as a std::vector, in order (nothing for
/// operations that give none). None at all is done at once.
/// ```
///   std::vector<decltype(kodo::receive(faces_[0], ghosts_[0]))> faces;
///   for (int f : neighbours_) faces.push_back(kodo::receive(faces_[f], ghosts_[f]));
///   co_await kodo::when_all(std::move(faces));
/// ```
template <class Op>
auto when_all(std::vector<detail::Awaitable<Op>> operations,
              std::source_location where = std::source_location::current()) {
  std::vector<Op, detail::RecycledAllocator<Op>> ops;
  ops.reserve(operations.size());
  for (auto& a : operations) ops.push_back(std::move(a.operation()));
  return detail::Awaitable<detail::AllOfRange<Op>>(detail::AllOfRange<Op>(std::move(ops), where));
}

}  // namespace kodo

// What the awaitables above are made of (after Task: they name its handle).
#include <kodo/tasking/tasks/detail/task_impl.hpp>
