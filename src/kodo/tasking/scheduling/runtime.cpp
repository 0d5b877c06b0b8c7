// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/runtime.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/settings.hpp>
#include <kodo/tasking/scheduling/detail/scheduler.hpp>
#include <kodo/tasking/units/detail/registry.hpp>
#include <kodo/version.hpp>

#include <Kokkos_Core.hpp>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <vector>

namespace kodo {
namespace {

// Set while a Runtime exists: one at a time.
std::atomic<bool> runtime_exists{false};

// Every rank must run the same program: ids of entry methods and reducers come from
// their names, so a rank built from other sources would misread every message.
void check_same_program(MPI_Comm comm) {
  const std::uint64_t mine = detail::handler_fingerprint();
  std::array<std::uint64_t, 2> local{mine, ~mine}, extremes{};
  KODO_MPI_CHECK(MPI_Allreduce(local.data(), extremes.data(), 2, MPI_UINT64_T, MPI_MIN, comm));
  if (extremes[0] != ~extremes[1])
    throw Error(
        detail::cat("the ranks run different programs: their entry methods and reducers differ "
                    "(this rank registered ",
                    detail::handler_count(), ", fingerprint ", std::hex, mine,
                    "); launch the same build on every rank"));
}

// The start-up's collectives are watched before the settings are agreed on, with this
// rank's KODO_STALL_SECONDS and KODO_STALL_EXIT where they are valid (else their
// defaults: the agreement then names the bad value on every rank).
std::unique_ptr<detail::Watchdog> watch_start_up() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double limit = detail::kStallSecondsUnset;
  bool end_job = true;
  try {
    limit = detail::seconds_setting("KODO_STALL_SECONDS").value_or(limit);
    end_job = detail::flag_setting("KODO_STALL_EXIT");
  } catch (const Error&) {
  }
  return std::make_unique<detail::Watchdog>(limit, end_job, rank);
}

// Kokkos answers --help by printing its options, on every rank. It is handed the
// command line without --help (the program's to answer); argv then keeps what Kokkos
// left, in order, and --help where it was.
void initialize_kokkos(int& argc, char**& argv) {
  if (!argv) {
    Kokkos::initialize(argc, argv);
    return;
  }
  std::vector<char*> shown;
  for (int i = 0; i < argc; ++i)
    if (i == 0 || std::string_view(argv[i]) != "--help") shown.push_back(argv[i]);
  int shown_count = static_cast<int>(shown.size());
  shown.push_back(nullptr);
  Kokkos::initialize(shown_count, shown.data());
  // Kokkos only removes arguments (its own), shifting the others down.
  const auto end = shown.begin() + shown_count;
  int kept = 0;
  for (int i = 0; i < argc; ++i)
    if (i == 0 || std::string_view(argv[i]) == "--help" ||
        std::find(shown.begin(), end, argv[i]) != end)
      argv[kept++] = argv[i];
  argc = kept;
  argv[argc] = nullptr;
}

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// --kokkos-help: rank 0 has Kokkos print its options, then every rank finalizes MPI and
// ends with status 0. Kokkos 4.7 and later end the process themselves once they have
// printed (std::exit), so rank 0 finalizes MPI on its way out: the launcher must see a
// clean exit.
[[noreturn]] void print_kokkos_help_and_exit(char* program, bool root) {
  if (root) {
    std::atexit(finalize_mpi);
    char flag[] = "--kokkos-help";
    std::array<char*, 3> args{program, flag, nullptr};
    int count = 2;
    Kokkos::initialize(count, args.data());
    Kokkos::finalize();
  }
  finalize_mpi();
  std::exit(0);
}

[[noreturn]] void print_settings_and_exit(bool root) {
  if (root) {
    std::fputs(settings_listing().c_str(), stdout);
    std::fflush(stdout);
  }
  finalize_mpi();
  std::exit(0);
}

}  // namespace

Runtime::Runtime(int& argc, char**& argv) {
  if (runtime_exists.exchange(true)) throw Error("only one kodo::Runtime may exist at a time");
  try {
    start(argc, argv);
  } catch (...) {
    stop();
    throw;
  }
}

Runtime::~Runtime() {
  // Shutting down is collective. A rank unwinding from an exception of its own would
  // wait there for ranks that are still working: end the job instead.
  if (std::uncaught_exceptions() > 0)
    fatal("an exception is leaving the program on this rank while others may still run");
  if (scheduler_) scheduler_->shutdown();
  stop();
}

void Runtime::start(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    own_mpi_ = true;
  }
  // Until the scheduler watches its own start: a rank that never comes holds the others.
  const auto start_watch = watch_start_up();
  const detail::WatchdogPhase watching(*start_watch, "starting the runtime (kodo::Runtime)");
  KODO_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  KODO_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &wave_comm_));
  for (MPI_Comm c : {comm_, wave_comm_})
    KODO_MPI_CHECK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  KODO_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  KODO_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  check_same_program(comm_);
  // The listing before the settings' check: a bad setting must not hide what they are.
  for (int i = 1; argv && i < argc; ++i)
    if (std::string_view(argv[i]) == "--kodo-help") print_settings_and_exit(rank_ == 0);
  // Before anything reads a setting: a rank whose settings are invalid or differ from its
  // peers' would take another path through the start-up collectives, and hang.
  detail::agree_on_settings(comm_);
  for (int i = 1; argv && i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--kokkos-help" && !Kokkos::is_initialized())
      print_kokkos_help_and_exit(argv[0], rank_ == 0);
    help_requested_ = help_requested_ || a == "--help";  // -h is the program's
    version_requested_ = version_requested_ || a == "--version";
  }
  // A program that started Kokkos itself has chosen the GPU already.
  placement_ = detail::place_rank(comm_, Kokkos::is_initialized() ? Kokkos::device_id() : -1);
  if (!Kokkos::is_initialized()) {
    // Kokkos takes the GPU chosen above unless told otherwise on its command line.
    if (placement_.device >= 0 && !std::getenv("KOKKOS_DEVICE_ID"))
      setenv("KOKKOS_DEVICE_ID", std::to_string(placement_.device).c_str(), 1);
    initialize_kokkos(argc, argv);
    own_kokkos_ = true;
  }
  const int streams = static_cast<int>(detail::count_setting("KODO_STREAMS", 4));
  // A rank that cannot create its streams must not leave the others waiting in the
  // collectives that follow: all ranks agree on the outcome.
  std::string problem;
  try {
    streams_ = std::make_unique<StreamPool>(streams);
  } catch (const Error& e) {
    problem = e.what();
  }
  detail::agree_on_failure(comm_, problem, "could not create its streams");
  if (!help_requested_ && !version_requested_) {
    if (rank_ == 0) print_error(version_line());
    // One line per rank only when asked: 4,608 of them on 768 nodes by default would bury
    // the run's own output.
    if (detail::flag_setting("KODO_PRINT_PLACEMENT")) print_placement();
  }
  scheduler_ = std::make_unique<detail::Scheduler>(comm_, wave_comm_, *streams_,
                                                   !placement_.shares_device,
                                                   help_requested_ || version_requested_);
}

// Releases what start() acquired, in reverse order; safe after a partial start.
void Runtime::stop() {
  scheduler_.reset();
  streams_.reset();
  if (own_kokkos_ && Kokkos::is_initialized()) Kokkos::finalize();
  if (wave_comm_ != MPI_COMM_NULL) MPI_Comm_free(&wave_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (own_mpi_) MPI_Finalize();
  runtime_exists = false;
}

MPI_Comm Runtime::comm() const {
  if (scheduler_ && scheduler_->running())
    throw Error(
        "Runtime::comm() is for the main program between run() calls: a collective inside "
        "run() (an entry method, a continuation or an on_reduced callback) blocks this rank "
        "until every rank joins it, and they may be waiting for this one (use the units' "
        "all_reduce or contribute)");
  return comm_;
}

std::string Runtime::version_line() const {
  unsigned ucx_major = 0, ucx_minor = 0, ucx_release = 0;
  ucp_get_version(&ucx_major, &ucx_minor, &ucx_release);
  int mpi_major = 0, mpi_minor = 0, library_length = 0;
  MPI_Get_version(&mpi_major, &mpi_minor);
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> library{};
  MPI_Get_library_version(library.data(), &library_length);
  std::string mpi_library(library.data());
  mpi_library = mpi_library.substr(0, mpi_library.find_first_of(",\n"));  // its name, version
  return detail::cat("kodo ", kodo::version(), " (commit ", kodo::commit(), "): backend ",
                     KODO_BACKEND_NAME, ", Kokkos ", KOKKOS_VERSION / 10000, '.',
                     KOKKOS_VERSION / 100 % 100, '.', KOKKOS_VERSION % 100, ", UCX ", ucx_major,
                     '.', ucx_minor, '.', ucx_release, ", MPI ", mpi_major, '.', mpi_minor, " (",
                     mpi_library, "), ", size_, size_ == 1 ? " rank" : " ranks");
}

// Collective: every rank's placement line, gathered to rank 0 and printed there in rank
// order (a fixed width: a line is short, and longer ones are cut rather than lost).
void Runtime::print_placement() const {
  constexpr std::size_t width = 256;
  std::array<char, width> line{};
  const std::string where = describe(placement_, rank_);
  where.copy(line.data(), width - 1);
  std::vector<char> all(rank_ == 0 ? width * static_cast<std::size_t>(size_) : 0);
  KODO_MPI_CHECK(MPI_Gather(line.data(), static_cast<int>(width), MPI_CHAR, all.data(),
                            static_cast<int>(width), MPI_CHAR, 0, comm_));
  for (int r = 0; rank_ == 0 && r < size_; ++r)
    print_error(detail::cat("placement: ", all.data() + static_cast<std::size_t>(r) * width));
}

bool Runtime::print_usage_if_requested(std::string_view usage) const {
  return print_usage_if_requested(usage, false);
}

bool Runtime::print_usage_if_requested(std::string_view usage, bool asked) const {
  const bool help = help_requested_ || asked;
  if (version_requested_ && !help) {
    if (rank_ == 0) {
      std::printf("%s\n", version_line().c_str());
      std::fflush(stdout);
    }
    return true;
  }
  if (!help) return false;
  if (rank_ == 0) {
    std::fwrite(usage.data(), 1, usage.size(), stdout);
    if (!usage.empty() && usage.back() != '\n') std::fputc('\n', stdout);
    std::fputs("Kokkos' own options (--kokkos-num-threads=N, ...): --kokkos-help\n", stdout);
    std::fputs("kodo's settings (KODO_* environment variables): --kodo-help\n", stdout);
    std::fflush(stdout);
  }
  return true;
}

void Runtime::when_done(CompletionSource& source, std::function<void()> continuation) {
  scheduler_->when_done(source, std::move(continuation));
}

void Runtime::launch(KernelBatch& batch, std::function<void()> then) {
  if (batch.empty()) return then();
  scheduler_->launch(batch, std::move(then));
}

void Runtime::run() { scheduler_->run(); }

RecordingReport Runtime::recording() const { return scheduler_->recording_report(); }

std::uint32_t Runtime::collection_count() const { return scheduler_->collection_count(); }
detail::CollectionBase& Runtime::collection(std::uint32_t id) { return scheduler_->collection(id); }
void Runtime::post(int rank, detail::Message&& message) {
  scheduler_->post(rank, std::move(message));
}
void Runtime::contribute(detail::CollectionBase& c, std::int64_t slot, std::uint64_t round,
                         std::uint64_t reducer, std::vector<std::byte> value) {
  scheduler_->contribute(c, slot, round, reducer, std::move(value));
}
void Runtime::on_reduced(detail::CollectionBase& c, const std::type_info& type,
                         ReducedCallback callback, const std::type_info* name) {
  scheduler_->on_reduced(c, type, std::move(callback), name);
}
const std::vector<std::byte>& Runtime::reduced(detail::CollectionBase& c,
                                               const std::type_info& type,
                                               const std::type_info* name) {
  return scheduler_->reductions().reduced(c, type, name);
}
detail::ChannelHost& Runtime::channel_host() { return *scheduler_; }
detail::TaskList& Runtime::tasks() { return scheduler_->tasks(); }

Kokkos::View<std::byte*, Kokkos::SharedHostPinnedSpace> Runtime::pinned_staging(std::size_t bytes) {
  return scheduler_->pool().staging(std::max<std::size_t>(bytes, 1));
}

void Runtime::add_collection(std::unique_ptr<detail::CollectionBase> collection) {
  scheduler_->add_collection(std::move(collection));
  const detail::WatchdogPhase watching(scheduler_->watchdog(),
                                       "creating a collection (kodo::Collection::create)");
  KODO_MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace kodo
