// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A completion source whose work never completes and which reports `what` when asked for
// its health: the stream of a device that has failed (stall_watch_test, fault_program).

#include <kodo/kodo.hpp>

#include <cstdint>
#include <string>
#include <utility>

class FailedSource final : public kodo::CompletionSource {
 public:
  explicit FailedSource(std::string what) : what_(std::move(what)) {}
  std::uint64_t mark() override { return ++marks_; }
  std::uint64_t reached() const override { return 0; }
  void check_health() const override { throw kodo::Error(what_); }

 private:
  std::string what_;
  std::uint64_t marks_ = 0;
};
