// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/backends/detail/recording.hpp>

#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/settings.hpp>

#include <Kokkos_Core.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <Cuda/Kokkos_Cuda_Instance.hpp>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

namespace kodo::detail {
namespace {

// --- what Kokkos does that a recording must see (Kokkos Tools callbacks) ---------------

Recording* watched = nullptr;  // the recording the callbacks serve (one runtime at a time)
Kokkos::Tools::Experimental::EventSet earlier{};  // a tool library's callbacks, called first

// Kokkos' buffer for kernels launched through constant memory (CUDA): the host copy their
// arguments are taken from, and the event its next user waits for. Null elsewhere.
struct ConstantMemory {
  unsigned char* staging = nullptr;
  backend::NativeEvent reusable = nullptr;
};
ConstantMemory constant_memory() {
  ConstantMemory c;
#if defined(KOKKOS_ENABLE_CUDA)
  const int device = Kokkos::Cuda().cuda_device();
  using Internal = Kokkos::Impl::CudaInternal;
  if (const auto s = Internal::constantMemHostStagingPerDevice.find(device);
      s != Internal::constantMemHostStagingPerDevice.end())
    c.staging = reinterpret_cast<unsigned char*>(s->second);
  if (const auto e = Internal::constantMemReusablePerDevice.find(device);
      e != Internal::constantMemReusablePerDevice.end())
    c.reusable = e->second;
#endif
  return c;
}
ConstantMemory constant;
constexpr std::size_t kCanaryBytes = 64;
// Turns in a row that find the buffer still in use by a launch outside a recording before
// recording stops: such a program would never be recorded.
constexpr int kConstantMemorySkips = 64;
constexpr const char* kConstantMemoryWhy =
    "a kernel was launched through Kokkos' constant memory (a functor and policy of 512 bytes "
    "or more), which a recording cannot hold; a smaller functor, or the policy's "
    "Kokkos::Experimental::WorkItemProperty::HintLightWeight, lets it be recorded";

void on_fence(const char* name, const std::uint32_t device, std::uint64_t* handle) {
  if (earlier.begin_fence) earlier.begin_fence(name, device, handle);
  if (watched && watched->open()) watched->close_early();
}

// Memory a recorded kernel may use must outlive the graph: the free (which waits for the
// device) comes after its launch.
void on_deallocate(Kokkos::Tools::SpaceHandle space, const char* label, const void* p,
                   std::uint64_t bytes) {
  if (earlier.deallocate_data) earlier.deallocate_data(space, label, p, bytes);
  if (watched && watched->open() && std::strcmp(space.name, "Host") != 0) watched->close_early();
}

void on_deep_copy(Kokkos::Tools::SpaceHandle to_space, const char* to_name, const void* to,
                  Kokkos::Tools::SpaceHandle from_space, const char* from_name, const void* from,
                  std::uint64_t bytes) {
  if (earlier.begin_deep_copy)
    earlier.begin_deep_copy(to_space, to_name, to, from_space, from_name, from, bytes);
  if (!watched || !watched->open() || bytes == 0) return;
  auto pageable = [](const Kokkos::Tools::SpaceHandle& space, const void* p) {
    return std::strcmp(space.name, "Host") == 0 && !backend::recordable_memory(p);
  };
  if (pageable(to_space, to) || pageable(from_space, from)) watched->close_early();
}

// While a recording is open only: with a callback set, Kokkos names every launch for
// tools, which unrecorded work need not pay for. A tool's own callbacks are kept.
void watch() {
  namespace tools = Kokkos::Tools::Experimental;
  earlier = tools::get_callbacks();
  tools::set_begin_fence_callback(on_fence);
  tools::set_begin_deep_copy_callback(on_deep_copy);
  tools::set_deallocate_data_callback(on_deallocate);
}

void unwatch() {
  namespace tools = Kokkos::Tools::Experimental;
  tools::set_begin_fence_callback(earlier.begin_fence);
  tools::set_begin_deep_copy_callback(earlier.begin_deep_copy);
  tools::set_deallocate_data_callback(earlier.deallocate_data);
}

}  // namespace

Recording::Mode Recording::mode_from_settings(std::string& why_off) {
  const std::string asked = choice_setting("KODO_RECORD");
  if (asked == "off") {
    why_off = "KODO_RECORD=off";
    return Mode::off;
  }
  if (backend::capture_supported()) return Mode::capture;
  if (std::string_view(backend::name()) == "host") {
    if (asked == "on") return Mode::group;
    why_off = "the host backend runs device work as it is issued (KODO_RECORD=on groups it)";
    return Mode::off;
  }
  if (asked == "on")
    throw Error(cat("KODO_RECORD=on: the ", backend::name(),
                    " backend records no device work yet (auto or off)"));
  why_off = cat("the ", backend::name(), " backend records no device work yet");
  return Mode::off;
}

Recording::Recording(StreamPool& pool, Mode mode, std::string why_off, int rank)
    : pool_(pool), mode_(mode), rank_(rank) {
  report_.on = mode != Mode::off;
  report_.off_because = std::move(why_off);
  if (mode == Mode::off) return;
  if (watched) throw Error("two runtimes record device work at once");
  captures_ = mode == Mode::capture;
  if (captures_) {
    origin_ = backend::create_stream(backend::Priority::compute);
    origin_event_ = backend::create_event();
    pool_.for_each([&](Stream&) { stream_events_.push_back(backend::create_event()); });
    constant = constant_memory();
    canary_.resize(kCanaryBytes);
    std::mt19937_64 draw{std::random_device{}()};
    for (auto& byte : canary_) byte = static_cast<unsigned char>(draw());
  }
  watched = this;
#if defined(KOKKOS_ENABLE_CUDA)
  default_stream_ = Kokkos::DefaultExecutionSpace().cuda_stream();
#endif
}

Recording::~Recording() {
  if (open_) unwatch();
  if (watched == this) watched = nullptr;
  if (!captures_) return;
  if (open_) {
    // A turn that threw: its recording is dropped (the job is ending).
    mark_streams(false);
    try {
      backend::destroy_captured(backend::end_capture(origin_));
    } catch (...) {
    }
  }
  for (const Program& p : programs_) backend::destroy_graph_exec(p.exec);
  for (auto e : stream_events_) backend::destroy_event(e);
  backend::destroy_event(origin_event_);
  backend::destroy_stream(origin_);
}

void Recording::mark_streams(bool recorded) {
  pool_.for_each([recorded](Stream& s) { s.recorded_ = recorded; });
}

void Recording::join_first() {
  // The origin waits for everything issued on the pool so far (eagerly, before the
  // recording starts), so the graph launched on it comes after that work.
  std::size_t i = 0;
  pool_.for_each([&](Stream& s) {
    backend::order_after(origin_, s.native_handle(), stream_events_[i++]);
  });
  join_first_ = false;
}

void Recording::begin(std::size_t pieces, bool turn_start) {
  if (open_ || mode_ == Mode::off) return;
  // A turn that is not recorded issues its work as it comes: the next recording's graph
  // must follow it.
  const bool outside = join_first_;
  join_first_ = true;
  if (holds_ > 0) return;
  if (mode_ == Mode::capture) {
    // One piece of work (one unit's, or one long loop) gains nothing from a graph and
    // would wait for the turn's end to start on the device.
    if (pieces < 2) return;
    if (constant.staging && std::memcmp(constant.staging, canary_.data(), kCanaryBytes) != 0) {
      // A launch through constant memory overwrote the canary outside a recording; the
      // buffer may be written again only once that launch has read it. Turns that keep
      // launching so, each before the last such launch ran, are never recorded: said.
      if (backend::event_state(constant.reusable) != backend::EventState::reached) {
        if (turn_start && ++constant_skips_ == kConstantMemorySkips)
          stop(cat(kConstantMemorySkips, " turns in a row: ", kConstantMemoryWhy));
        return;
      }
      std::memcpy(constant.staging, canary_.data(), kCanaryBytes);
    }
    constant_skips_ = 0;
    if (outside) join_first();
    join_first_ = false;
    backend::begin_capture(origin_);
    backend::record_event(origin_, origin_event_);
    pool_.for_each([&](Stream& s) { backend::wait_event(s.native_handle(), origin_event_); });
    mark_streams(true);  // (once every one has joined)
  }
  if (mode_ == Mode::group) join_first_ = false;
  open_ = true;
  watch();
}

void Recording::close() {
  if (!open_) return;
  open_ = false;
  unwatch();
  if (mode_ == Mode::capture) {
    mark_streams(false);
    try {
      // The turn's copies follow what the streams they were sent after hold, not the whole
      // turn: the rest of it (the next inner update of an overlapped stencil) runs beside
      // them. Then the streams the turn used join the origin (a graph ends on it), in one
      // update of its dependencies; a stream with nothing recorded has nothing to join.
      tails_.clear();
      copy_tails_.clear();
      pool_.for_each([&](Stream& s) {
        const std::size_t first = tails_.size();
        backend::recorded_tail(s.native_handle(), tails_);
        if (std::find(copies_after_.begin(), copies_after_.end(), &s) != copies_after_.end())
          copy_tails_.insert(copy_tails_.end(), tails_.begin() + first, tails_.end());
      });
      if (!copies_.empty()) {
        backend::order_after_nodes(origin_, copy_tails_);
        make_copies();
      }
      backend::order_after_nodes(origin_, tails_);
      const backend::CapturedGraph graph = backend::end_capture(origin_);
      if (graph) launch(graph);
      // Work issued from now on, recorded or not, comes after what the origin ran or
      // waited for, on every stream (the default instance's too).
      backend::record_event(origin_, origin_event_);
      pool_.for_each([&](Stream& s) { backend::wait_event(s.native_handle(), origin_event_); });
      if (default_stream_) backend::wait_event(default_stream_, origin_event_);
    } catch (...) {
      // What the recording held is lost: nothing waits for it, and nothing is recorded
      // again (the caller ends the job). The origin leaves the capture if it is still in it.
      try {
        backend::destroy_captured(backend::end_capture(origin_));
      } catch (...) {
      }
      after_launch_.clear();
      copies_.clear();
      copies_after_.clear();
      mode_ = Mode::off;
      report_.on = false;
      report_.off_because = "a recording failed: " + what_of_current();
      throw;
    }
    check_constant_memory();
  } else {
    make_copies();  // grouped: the work ran as issued, the copies now
  }
  ++report_.turns;
  std::vector<std::function<void()>> waiting;
  waiting.swap(launched_);  // (kept between turns for its capacity)
  waiting.swap(after_launch_);
  for (auto& f : waiting) f();
  waiting.clear();
  launched_.swap(waiting);
}

void Recording::launch(backend::CapturedGraph graph) {
  struct Drop {
    backend::CapturedGraph g;
    ~Drop() { backend::destroy_captured(g); }
  } drop{graph};
  // The program launched last may still run: updating it to other parameters costs the
  // driver ~4x more than updating an idle one (measured on an H200), so it is not chosen. A
  // rank's turns of one shape then take turns between two programs, and a turn whose
  // parameters repeat every second turn (a stencil's two fields) finds them unchanged.
  // Units that wait for other ranks are served in turns of many shapes (which units a turn
  // serves depends on when data arrives): enough programs are kept for a few dozen shapes,
  // and only those of the graph's shape key are tried.
  const std::uint64_t shape = backend::shape_key(graph);
  backend::NativeGraphExec program = nullptr;
  for (std::size_t i = 1; i < programs_.size() && !program; ++i) {
    if (programs_[i].shape != shape || !backend::update_exec(programs_[i].exec, graph)) continue;
    program = programs_[i].exec;
    programs_.erase(programs_.begin() + static_cast<std::ptrdiff_t>(i));
    ++report_.reused;
  }
  if (!program) {
    program = backend::instantiate_captured(graph);
    ++report_.instantiated;
    constexpr std::size_t kPrograms = 64;
    if (programs_.size() == kPrograms) {
      backend::destroy_graph_exec(programs_.back().exec);  // freed once its launches are done
      programs_.pop_back();
    }
  }
  programs_.insert(programs_.begin(), Program{program, shape});
  backend::launch_graph(origin_, program);
  // A kernel launched through constant memory was recorded (stop() follows): Kokkos'
  // next such launch must wait for this graph, which reads the buffer.
  if (constant.staging && std::memcmp(constant.staging, canary_.data(), kCanaryBytes) != 0 &&
      backend::event_state(constant.reusable) == backend::EventState::captured)
    backend::record_event(origin_, constant.reusable);
}

void Recording::after_launch(std::function<void()> f) {
  if (open_)
    after_launch_.push_back(std::move(f));
  else
    f();
}

bool Recording::defer_copy(const Stream& after, void* to, const void* from, std::size_t bytes) {
  if (!open_) return false;
  bool pooled = false;
  pool_.for_each([&](Stream& s) { pooled = pooled || &s == &after; });
  if (!pooled) return false;
  copies_.push_back({to, from, bytes});
  if (std::find(copies_after_.begin(), copies_after_.end(), &after) == copies_after_.end())
    copies_after_.push_back(&after);
  return true;
}

void Recording::make_copies() {
  if (copies_.empty()) return;
  static const std::string region = "kodo::channel copy";
  const ToolRegion here(region);
  backend::enqueue_copies(origin_, copies_);
  copies_.clear();  // (their capacity kept for the next turn)
  copies_after_.clear();
}

void Recording::hold() {
  close();
  ++holds_;
}

void Recording::close_early() {
  // Called from Kokkos (a fence, a copy, a free), which cannot carry an exception on.
  try {
    close();
  } catch (...) {
    fatal(what_of_current());
  }
  ++report_.ended_early;
  join_first_ = true;  // the rest of the turn is issued as it comes
}

void Recording::check_constant_memory() {
  if (constant.staging && std::memcmp(constant.staging, canary_.data(), kCanaryBytes) != 0)
    stop(kConstantMemoryWhy);
}

void Recording::stop(const std::string& why) {
  if (mode_ == Mode::off) return;
  close();
  join_first_ = true;
  mode_ = Mode::off;
  report_.on = false;
  report_.off_because = why;
  std::fprintf(stderr, "kodo: rank %d records no more device work: %s\n", rank_, why.c_str());
}

RecordingReport Recording::report() const { return report_; }

}  // namespace kodo::detail
