// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// Recording a rank's turns (recording.hpp says what users see). The scheduler opens a
// recording before a turn runs anything and closes it when the turn ends; in between,
// every stream of the pool is captured together: each joins the recording through an
// event of a stream of its own (the origin), and joins back before it ends (the origin
// takes every stream's last nodes in one update). Orders between the pool's streams
// while they are recorded (Stream::wait_for) are the graph's edges too, not events. Closing
// launches the graph on the origin (an instantiated one of the same shape, updated, or a
// new one), makes every stream of the pool wait for it, and then runs what waited for
// the launch (same-rank transfers hand over their data then: the next turn's work runs
// after this graph on every stream).
//
// Kokkos Tools callbacks watch what cannot be recorded: a fence (the host waits for the
// device), a copy to or from pageable host memory, or a free of device memory (a recorded
// kernel may still use it) closes the recording at once, and the turn goes on
// unrecorded. (No callback on launches: Kokkos fences the whole device before each one a
// tool watches.) A kernel launched through Kokkos' constant memory (a functor and policy
// of 512 bytes or more: its arguments come from one host buffer that the next such launch
// overwrites) is found at close, by a canary in that buffer, and stops recording on the
// rank for good (as do 64 turns in a row that each begin while such a launch made outside
// a recording has not yet read the buffer: they cannot be recorded); two such launches in one turn
// cannot be recorded at all (Kokkos' wait for the buffer fails, and the job ends with CUDA's
// error). So does a stream's wait on the device for another rank (the same-node route): a graph
// after it would hold the rank's next turn behind it. Other callbacks a tool library set are kept
// and called first.
//
// Work issued outside a recording (a turn not recorded, the transport's progress, the
// main program) is joined first: the next recording's graph follows it on the origin.
//
// Copies between units of the rank (same-rank channel transfers) are not issued one call
// each: the turn's are made at close, after the streams join, by one kernel (a call of
// ~1 us each on the host was a third of a recorded unit-step's calls). Their ends learn
// of them after the launch, as before; a sender may write its view again only then
// (Channel::send's `sent`), so the source is read as the turn left it.
//
// On the host backend (mode group) nothing is captured: a turn's work runs as it is
// issued, and recording only groups it, so that the scheduling it implies (transfers
// handed over after the turn) is tested where CI runs.

#include <kodo/backends/detail/native.hpp>
#include <kodo/backends/recording.hpp>
#include <kodo/backends/stream.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kodo::detail {

class Recording {
 public:
  enum class Mode { off, capture, group };
  // The mode KODO_RECORD asks for on this backend; `why_off` says why when it is off.
  static Mode mode_from_settings(std::string& why_off);

  // Records `pool`'s streams; `rank` names the rank in the notice printed on stopping.
  Recording(StreamPool& pool, Mode mode, std::string why_off, int rank);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // Whether a recording is open (the work issued now is recorded, or grouped).
  bool open() const { return open_; }
  // Whether this rank records (or groups) turns: not off, not stopped.
  bool on() const { return mode_ != Mode::off; }
  // Whether recordings only group work that ran as it was issued (the host backend).
  bool groups() const { return mode_ == Mode::group; }
  // Opens a recording for the rest of a turn that has `pieces` messages and continuations
  // left to run, unless recording is off or held, or (when capturing) there is just one.
  // `turn_start`: the turn's first try (a later one follows work issued as it came).
  void begin(std::size_t pieces, bool turn_start = true);
  // Closes the open recording, if any: launches what it holds, then runs after_launch's
  // functions. Throws kodo::Error if the recording failed.
  void close();
  // Runs `f` once the open recording's work is launched (at close), or now.
  void after_launch(std::function<void()> f);
  // Takes a copy between two places the device addresses, to be made after the work the
  // open recording holds on `after` (and on the streams the turn's other such copies were
  // sent after) at its close, with those copies in one launch (a same-rank channel
  // transfer: its ends learn of it after_launch). False, taking nothing, when no recording
  // is open or `after` is not one of the pool's streams.
  bool defer_copy(const Stream& after, void* to, const void* from, std::size_t bytes);
  // While held (a step program launches its own graphs; units' device times are taken
  // with events), no recording opens. Closes an open one.
  void hold();
  void release() { --holds_; }
  // Off for the rest of the run, with a one-line notice on standard error. Closes an
  // open recording first.
  void stop(const std::string& why);
  // Work was issued outside a recording (by the main program, a balancer, the rest of a
  // turn after a fence): the next recording's work is ordered after it.
  void issued_outside() { join_first_ = true; }

  RecordingReport report() const;

  // The Kokkos Tools callback (recording.cpp) for a fence or a copy that cannot be
  // recorded: closes the recording, and the turn goes on unrecorded.
  void close_early();

 private:
  void check_constant_memory();
  void make_copies();
  void launch(backend::CapturedGraph graph);
  void join_first();
  // Tells the pool's streams whether they are joined to the open recording
  // (Stream::wait_for orders them by its nodes then).
  void mark_streams(bool recorded);

  StreamPool& pool_;
  Mode mode_;
  int rank_;
  bool open_ = false, join_first_ = true;
  bool captures_ = false;  // the origin, events and programs exist
  int holds_ = 0;
  int constant_skips_ = 0;  // turns in a row not recorded for a constant-memory launch
  RecordingReport report_;
  backend::NativeStream origin_ = nullptr;
  backend::NativeStream default_stream_ = nullptr;  // Kokkos' default instance's (CUDA)
  backend::NativeEvent origin_event_ = nullptr;
  std::vector<backend::NativeEvent> stream_events_;  // by stream, pool order
  struct Program {
    backend::NativeGraphExec exec;
    std::uint64_t shape;  // backend::shape_key of the graph it was built from
  };
  std::vector<Program> programs_;  // most recently used first
  std::vector<std::function<void()>> after_launch_;
  std::vector<std::function<void()>> launched_;       // close()'s (reused)
  std::vector<backend::DeviceCopy> copies_;           // defer_copy's, made at close
  std::vector<const Stream*> copies_after_;           // ... after these streams' work
  std::vector<backend::NativeGraphNode> tails_;       // close()'s (reused)
  std::vector<backend::NativeGraphNode> copy_tails_;  // ... of the streams copies follow
  std::vector<unsigned char> canary_;  // what Kokkos' constant-memory buffer held at begin()
};

}  // namespace kodo::detail
