// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// An inbox: values put by entry methods, awaited by a unit's task by key. It is how a task
/// awaits a call's arrival: the call carries its data and a key (its step, say), its entry
/// method puts them here, and the task takes the key when it needs it
/// (examples/13_inbox.cpp, a scan across units whose partners change from step to step):
/// @snippet 13_inbox.cpp inbox
/// A value put before its key is awaited waits here, so a caller one step ahead is
/// harmless. A key holds one value at a time (Inbox says what else is an error).

#include <kodo/core/error.hpp>
#include <kodo/tasking/tasks/task.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <utility>

namespace kodo {

/// Values of type T under keys, for tasks to await (see this file's description). A task
/// awaiting a key goes on from the scheduler loop once it is put (never inside put). A key
/// holds one value at a time: putting a key that holds a value, or awaiting a key another
/// task awaits, throws kodo::Error; once taken, the key may be put again (keys by parity,
/// say). A task that awaits a key nobody puts is reported as any waiting task is (the key
/// shown where it is an integer). An inbox is not copied; one moved from throws kodo::Error
/// when used. A task awaiting a key of an inbox that is then replaced (assigned another)
/// waits for a put that cannot come, and is reported so.
template <class Key, class T>
class Inbox {
 public:
  /// An empty inbox.
  Inbox() : state_(std::make_shared<State>()) {}
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;
  /// Moves the inbox; `other` may then not be used.
  ///@{
  Inbox(Inbox&&) noexcept = default;
  Inbox& operator=(Inbox&&) noexcept = default;
  ///@}

  /// Puts `value` under `key`: to the task awaiting it, or kept until one does.
  void put(const Key& key, T value) {
    State& s = state();
    if (auto w = s.deliver(key, value)) {
      w->task->host->expect_event();  // resumed from the loop, not inside the caller
      w->task->host->queue_callback(std::move(w->done));
      return;
    }
    if (!s.hold(key, std::move(value)))
      throw Error(detail::cat("an inbox was given key ", describe(key),
                              " twice before a task took it"));
  }

  /// Awaited in a task: the value put under `key` (now, or once it is put).
  auto take(const Key& key, std::source_location where = std::source_location::current()) {
    state();  // not moved from
    return detail::Awaitable<Take>(Take{state_, key, where});
  }

  /// Whether a value is held under `key` (put, not taken yet); how many are.
  ///@{
  bool holds(const Key& key) const { return state().holds(key); }
  std::size_t size() const { return state().held(); }
  ///@}

 private:
  using State = detail::KeyedArrivals<Key, T>;
  State& state() const {
    if (!state_) throw Error("an Inbox was used after it was moved from");
    return *state_;
  }
  static std::int64_t number_of(const Key& key) {
    if constexpr (std::integral<Key>)
      return static_cast<std::int64_t>(key);
    else
      return -1;
  }
  static std::string describe(const Key& key) {
    if constexpr (std::integral<Key>)
      return std::to_string(key);
    else
      return "(not an integer)";
  }
  struct Take {
    std::shared_ptr<State> state;  ///< the inbox may be moved while a task awaits
    Key key;
    std::source_location where;
    std::optional<T> value{};
    bool ready() {
      return value || state->take_held(key, value);  // (taken by an earlier ask)
    }
    void start(detail::TaskRecord& task, std::function<void()> done) {
      if (!state->await(key, {&value, &task, std::move(done)}))
        throw Error(detail::cat("key ", describe(key),
                                " of an inbox is awaited by two tasks at once"));
    }
    T result() { return std::move(*value); }
    const char* what() const {
      if constexpr (std::integral<Key>)
        return "a value put in a kodo::Inbox (a call's arrival) under key";
      else
        return "a value put in a kodo::Inbox (a call's arrival)";
    }
    std::int64_t number() const { return number_of(key); }
  };

  std::shared_ptr<State> state_;
};

}  // namespace kodo
