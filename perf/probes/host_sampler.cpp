// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Where a rank's host time, or its heap allocations, go: an LD_PRELOAD library that
// records call stacks of the thread that loaded it (the main thread: kodo's scheduler),
// for sampler_report.py to symbolize and sum. Not built with kodo:
//
//   g++ -O2 -shared -fPIC -o libhost_sampler.so host_sampler.cpp -ldl -lrt
//   LD_PRELOAD=./libhost_sampler.so SAMPLER_OUT=/tmp/s program ...
//   python3 sampler_report.py /tmp/s.PID --within 'Scheduler::run'
//
// SAMPLER_US=N (default 200): a stack every N microseconds of wall-clock time (a timer
// signal to the main thread: time spent waiting counts too). SAMPLER_MALLOC_EVERY=N
// instead: the stack of every N-th malloc of any thread, and their count on exit. Writes
// SAMPLER_OUT.PID (a line naming the mode and this library, then one line of return
// addresses a stack, the sampler's own frames first) and SAMPLER_OUT.PID.maps (the process's
// mappings) at exit, from processes that took at least 10 stacks (mpirun's are left out).
#include <execinfo.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {
constexpr int kDepth = 40;
constexpr std::size_t kMax = 400000;
struct Stack {
  int n;
  void* pc[kDepth];
};
Stack* stacks = nullptr;
std::atomic<std::size_t> taken{0};
std::atomic<unsigned long> mallocs{0};
unsigned malloc_every = 0;  // 0: sample by time
bool ready = false;
thread_local bool inside = false;
timer_t timer;

void take_stack() {
  const std::size_t i = taken.fetch_add(1, std::memory_order_relaxed);
  if (i < kMax) stacks[i].n = backtrace(stacks[i].pc, kDepth);
}

void on_signal(int, siginfo_t*, void*) {
  const int saved = errno;
  take_stack();
  errno = saved;
}

void copy_file(const char* from, const char* to) {
  FILE* in = std::fopen(from, "r");
  FILE* out = std::fopen(to, "w");
  char buf[4096];
  std::size_t got;
  while (in && out && (got = std::fread(buf, 1, sizeof buf, in)) > 0) std::fwrite(buf, 1, got, out);
  if (in) std::fclose(in);
  if (out) std::fclose(out);
}

void dump() {
  ready = false;
  if (malloc_every == 0) timer_delete(timer);
  const char* base = std::getenv("SAMPLER_OUT");
  if (!base || !stacks || taken.load() < 10) return;
  char path[4000], maps[4100];
  std::snprintf(path, sizeof path, "%s.%d", base, static_cast<int>(getpid()));
  std::snprintf(maps, sizeof maps, "%s.maps", path);
  if (FILE* f = std::fopen(path, "w")) {
    Dl_info self{};
    dladdr(reinterpret_cast<void*>(&take_stack), &self);
    std::fprintf(f, "# host_sampler %s %s\n", malloc_every ? "malloc" : "time",
                 self.dli_fname ? self.dli_fname : "?");
    const std::size_t n = std::min(taken.load(), kMax);
    for (std::size_t i = 0; i < n; ++i) {
      for (int d = 0; d < stacks[i].n; ++d) std::fprintf(f, "%p ", stacks[i].pc[d]);
      std::fputc('\n', f);
    }
    std::fclose(f);
  }
  copy_file("/proc/self/maps", maps);
  if (malloc_every) std::fprintf(stderr, "host_sampler: %lu mallocs\n", mallocs.load());
}

using Malloc = void* (*)(std::size_t);
Malloc real_malloc = nullptr;
char early[1 << 16];  // dlsym's own allocations, before real_malloc is known
std::size_t early_used = 0;
}  // namespace

extern "C" void* malloc(std::size_t n) {
  if (!real_malloc) {
    if (inside) {
      void* p = early + early_used;
      early_used += (n + 15) / 16 * 16;
      return p;
    }
    inside = true;
    real_malloc = reinterpret_cast<Malloc>(dlsym(RTLD_NEXT, "malloc"));
    inside = false;
  }
  void* p = real_malloc(n);
  if (!ready || malloc_every == 0 || inside) return p;
  if (mallocs.fetch_add(1, std::memory_order_relaxed) % malloc_every == 0) {
    inside = true;
    take_stack();
    inside = false;
  }
  return p;
}

namespace {
struct Start {
  Start() {
    if (!std::getenv("SAMPLER_OUT")) return;
    inside = true;
    stacks = static_cast<Stack*>(std::calloc(kMax, sizeof(Stack)));
    void* warm[4];
    backtrace(warm, 4);  // loads the unwinder outside a signal handler
    std::atexit(dump);
    inside = false;
    if (const char* every = std::getenv("SAMPLER_MALLOC_EVERY")) {
      malloc_every = static_cast<unsigned>(std::max(1, std::atoi(every)));
      ready = true;
      return;
    }
    struct sigaction sa{};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, nullptr);
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) return;
    const char* us = std::getenv("SAMPLER_US");
    const long period_ns = (us ? std::max(10L, std::atol(us)) : 200L) * 1000L;
    itimerspec spec{};
    spec.it_interval.tv_sec = period_ns / 1000000000L;
    spec.it_interval.tv_nsec = period_ns % 1000000000L;
    spec.it_value = spec.it_interval;
    timer_settime(timer, 0, &spec, nullptr);
    ready = true;
  }
} start;
}  // namespace
