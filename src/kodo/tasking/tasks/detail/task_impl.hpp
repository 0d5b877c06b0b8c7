// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What a task awaits, made of operations (tasking/tasks/task.hpp's kodo::receive and when_all,
// and WorkUnit's awaitables), and the values that come by key or round for tasks to
// await (AwaitableRing, Inbox, all_reduce). Installed: their templates are instantiated
// in the user's program.

#include <kodo/backends/stream.hpp>
#include <kodo/comm/channel.hpp>
#include <kodo/comm/serialize.hpp>
#include <kodo/core/detail/recycled.hpp>
#include <kodo/core/error.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/tasks/kernel_batch.hpp>
#include <kodo/tasking/tasks/task.hpp>

#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace kodo {

namespace detail {

// A top-level task has ended: leaves its list and is destroyed; an exception that left it
// is rethrown by the resume_task() under way.
std::coroutine_handle<> end_task(Task::Handle ended) noexcept;

// What a task may await, built on an operation that
//   bool ready()                      is complete already (then start() is not called)
//   void start(TaskRecord&, done)     begins, and calls done() later from the scheduler
//                                     loop, never from inside start()
//   result()                          its value once done
//   const char* what(); std::int64_t number(); std::source_location where
//                                     describe it while a task waits for it.
template <class Op>
class [[nodiscard]] Awaitable {
 public:
  explicit Awaitable(Op op) : op_(std::move(op)) {}
  bool await_ready() { return op_.ready(); }
  void await_suspend(Task::Handle waiting) {
    TaskRecord* task = waiting.promise().task;
    task->awaiting = op_.what();
    task->where = op_.where;
    op_.start(*task, [waiting, task] {
      task->awaiting = nullptr;
      resume_task(*task, waiting);
    });
    task->number = op_.number();  // some operations know it once started (a round)
  }
  decltype(auto) await_resume() { return op_.result(); }
  Op& operation() { return op_; }

 private:
  Op op_;
};

// when_done(stream): the work enqueued on a completion source so far.
struct DeviceWorkDone {
  Runtime* runtime;
  CompletionSource* source;
  std::source_location where;
  bool ready() const { return false; }
  void start(TaskRecord&, std::function<void()> done) {
    runtime->when_done(*source, std::move(done));
  }
  void result() const {}
  const char* what() const { return "the device work enqueued on a stream (when_done)"; }
  std::int64_t number() const { return -1; }
};

// launch(batch): a unit's kernel batch, launched with the rank's other batches at the
// end of the scheduler's turn.
struct BatchLaunched {
  Runtime* runtime;
  KernelBatch* batch;
  std::source_location where;
  bool ready() const { return batch->empty(); }
  void start(TaskRecord&, std::function<void()> done) { runtime->launch(*batch, std::move(done)); }
  void result() const {}
  const char* what() const { return "the launch of a kernel batch (launch)"; }
  std::int64_t number() const { return -1; }
};

// receive(channel, view): the peer's next send on the channel.
template <class V>
struct ChannelReceive {
  Channel* channel;
  V into;
  std::source_location where;
  std::size_t count = 0;
  bool ready() const { return false; }
  void start(TaskRecord&, std::function<void()> done) {
    channel->recv(into, [this, done = std::move(done)](std::size_t n) {
      count = n;
      done();
    });
  }
  std::size_t result() const { return count; }
  const char* what() const { return "a receive posted on a channel (kodo::receive)"; }
  std::int64_t number() const { return -1; }
};

// send(channel, view): a send on the channel, done once the view may be written again.
template <class V>
struct ChannelSend {
  Channel* channel;
  V from;
  std::source_location where;
  bool ready() const { return false; }
  void start(TaskRecord&, std::function<void()> done) { channel->send(from, std::move(done)); }
  void result() const {}
  const char* what() const { return "a send on a channel (kodo::send)"; }
  std::int64_t number() const { return -1; }
};

// Values that come by key and the tasks that await them (AwaitableRing, Inbox): a value
// that comes first is held until its key is awaited, an await that comes first waits.
template <class Key, class T>
class KeyedArrivals {
 public:
  struct Waiter {
    std::optional<T>* into;
    TaskRecord* task;
    std::function<void()> done;
  };
  // The waiter of `key`, given `value`, or nothing (no task awaits it yet).
  std::optional<Waiter> deliver(const Key& key, T& value) {
    auto found = waiting_.find(key);
    if (found == waiting_.end()) return std::nullopt;
    *found->second.into = std::move(value);
    Waiter w = std::move(found->second);
    waiting_.erase(found);
    return w;
  }
  // Holds `value` until `key` is awaited; false when `key` holds one already.
  bool hold(const Key& key, T value) { return held_.emplace(key, std::move(value)).second; }
  // Moves the value held under `key` into `into`; false when there is none.
  bool take_held(const Key& key, std::optional<T>& into) {
    auto found = held_.find(key);
    if (found == held_.end()) return false;
    into = std::move(found->second);
    held_.erase(found);
    return true;
  }
  // Awaits `key`; false when another task awaits it already.
  bool await(const Key& key, Waiter w) { return waiting_.emplace(key, std::move(w)).second; }
  bool holds(const Key& key) const { return held_.count(key) != 0; }
  std::size_t held() const { return held_.size(); }

 private:
  RecycledMap<Key, T> held_;
  RecycledMap<Key, Waiter> waiting_;
};

// The rounds of all_reduce a unit awaits: the reduction tree hands each its result.
class AwaitedRounds {
 public:
  void expect(std::uint64_t round, std::function<void(const Bytes&)> take) {
    waiting_[round] = std::move(take);
  }
  void deliver(std::uint64_t round, const Bytes& value) {
    auto found = waiting_.find(round);
    if (found == waiting_.end())
      throw Error("kodo: an all_reduce result came for a round no task of the unit awaits");
    auto take = std::move(found->second);
    waiting_.erase(found);
    take(value);
  }

 private:
  RecycledMap<std::uint64_t, std::function<void(const Bytes&)>> waiting_;
};

template <class U>
AwaitedRounds& awaited_rounds(U& unit);  // defined in work_unit.hpp

// when_all(a, b, ...): done when every operation is.
// Starts, through `each(start_one)`, every operation of a when_all not complete already,
// and calls `done` once all of them have completed; `left` (the awaiter's) counts them.
template <class ForEach>
void start_all(TaskRecord& task, std::function<void()> done, std::size_t& left, ForEach&& each) {
  auto finished = recycled([&left, done] {
    if (--left == 0) done();
  });
  left = 1;  // held until every operation has started, so none ends the wait early
  try {
    each([&](auto& op) {
      ++left;
      op.start(task, finished);
    });
  } catch (...) {
    // Those started will complete into this frame, which the exception unwinds.
    if (left > 2)
      fatal(cat(task.unit,
                ": a when_all could not start all of its operations: ", what_of_current()));
    throw;
  }
  finished();
}

template <class... Ops>
struct AllOf {
  static_assert((!requires { Ops::ends_task; } && ...),
                "kodo: a balance point ends its task: await it alone, not in a when_all");
  explicit AllOf(std::tuple<Ops...> operations)
      : ops(std::move(operations)), where(std::get<0>(ops).where) {}
  std::tuple<Ops...> ops;
  std::source_location where;  // the first operation's
  std::size_t left = 0;
  // Which operations were complete when asked: asked once each (asking may take what
  // completed them, as an inbox's take does).
  std::array<bool, sizeof...(Ops)> complete{};

  bool ready() {
    std::size_t i = 0;
    std::apply([&](auto&... op) { ((complete[i] = op.ready(), ++i), ...); }, ops);
    for (bool c : complete)
      if (!c) return false;
    return true;
  }
  void start(TaskRecord& task, std::function<void()> done) {
    start_all(task, std::move(done), left, [&](auto&& start_one) {
      std::size_t i = 0;
      std::apply([&](auto&... op) { ((complete[i++] ? void() : start_one(op)), ...); }, ops);
    });
  }
  auto result() {
    return std::apply(
        [](auto&... op) { return std::tuple<decltype(result_of(op))...>{result_of(op)...}; }, ops);
  }
  const char* what() const { return "every operation of a when_all"; }
  std::int64_t number() const { return -1; }

 private:
  template <class Op>
  static auto result_of(Op& op) {
    if constexpr (std::is_void_v<decltype(op.result())>) {
      op.result();
      return std::monostate{};
    } else {
      return op.result();
    }
  }
};

// when_all(operations): done when every one of a run-time number of operations is.
template <class Op>
struct AllOfRange {
  static_assert(
      !requires { Op::ends_task; },
      "kodo: a balance point ends its task: await it alone, not in a when_all");
  using Result = decltype(std::declval<Op&>().result());
  AllOfRange(std::vector<Op, RecycledAllocator<Op>> operations, std::source_location at)
      : ops(std::move(operations)), where(at) {}
  // (Not moved once started: an operation may point into itself.)
  std::vector<Op, RecycledAllocator<Op>> ops;
  std::source_location where;
  std::size_t left = 0;
  std::vector<char, RecycledAllocator<char>> complete;  // asked once each, as in AllOf

  bool ready() {
    complete.assign(ops.size(), 0);
    bool all = true;
    for (std::size_t i = 0; i < ops.size(); ++i) all = (complete[i] = ops[i].ready()) && all;
    return all;
  }
  void start(TaskRecord& task, std::function<void()> done) {
    start_all(task, std::move(done), left, [&](auto&& start_one) {
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (!complete[i]) start_one(ops[i]);
    });
  }
  auto result() {
    if constexpr (std::is_void_v<Result>) {
      for (auto& op : ops) op.result();
    } else {
      std::vector<std::decay_t<Result>> results;
      results.reserve(ops.size());
      for (auto& op : ops) results.push_back(op.result());
      return results;
    }
  }
  const char* what() const { return "every operation of a when_all"; }
  std::int64_t number() const { return -1; }
};

}  // namespace detail

// A coroutine that ends goes on with the one awaiting it, or ends its task.
inline std::coroutine_handle<> Task::promise_type::Final::await_suspend(Handle ended) noexcept {
  if (auto next = ended.promise().continuation) return next;
  return detail::end_task(ended);
}

}  // namespace kodo
