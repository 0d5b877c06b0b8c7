// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/core/error.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>

#include <mpi.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

namespace kodo {
namespace {

std::string prefixed(const std::string& what) {
  return what.rfind("kodo: ", 0) == 0 ? what : "kodo: " + what;
}

}  // namespace

Error::Error(const std::string& what) : std::runtime_error(prefixed(what)) {}

void fatal(const std::string& what) {
  detail::print_fatal(what);
  detail::abort_job();
}

namespace {
bool mpi_is_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}
}  // namespace

void detail::print_fatal(const std::string& what) {
  int rank = -1;
  if (mpi_is_running()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string text = what.rfind("kodo: ", 0) == 0 ? what.substr(6) : what;
  print_error("kodo: fatal error on rank " + std::to_string(rank) + ": " + text);
}

void print_error(std::string_view text) {
  // One write of the whole line: a pipe takes up to PIPE_BUF bytes at once, so the
  // launcher cannot split the line with other output (its abort banner, another rank's).
  std::string line(text);
  if (line.empty() || line.back() != '\n') line += '\n';
  std::fflush(stderr);
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
}

void detail::abort_job() {
  if (mpi_is_running()) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void detail::check_mpi(int result, const char* call, std::source_location at) {
  if (result == MPI_SUCCESS) return;
  char reason[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  MPI_Error_string(result, reason, &length);
  fatal(detail::call_failed("MPI", call, at.file_name(), static_cast<int>(at.line()), reason));
}

void detail::agree_on_failure(MPI_Comm comm, const std::string& problem,
                              const std::string& what_failed) {
  int failed = problem.empty() ? 0 : 1, any = 0;
  KODO_MPI_CHECK(MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm));
  if (failed) throw Error(problem);
  if (any) throw Error("another rank " + what_failed + " (see its message)");
}

void detail::agree_and_report(MPI_Comm comm, const std::string& problem) {
  int rank = 0;
  KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  int mine = problem.empty() ? INT_MAX : rank, first = INT_MAX;
  KODO_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == INT_MAX) return;
  int length = static_cast<int>(problem.size());
  KODO_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  std::string text = rank == first ? problem : std::string(static_cast<std::size_t>(length), ' ');
  KODO_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, first, comm));
  if (rank == first) throw Error(text);
  std::string_view bare = text;
  if (bare.starts_with("kodo: ")) bare.remove_prefix(6);
  throw Error(detail::cat("rank ", first, ": ", bare));
}

namespace detail {

std::string call_failed(const char* library, const char* call, const char* file, int line,
                        const std::string& reason) {
  return cat(library, " call ", call, " failed at ", file, ":", line, ": ", reason);
}

std::string quoted_excerpt(std::string_view text) {
  constexpr std::size_t kMost = 64;
  std::string out = "'";
  for (const char c : text.substr(0, kMost)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\'' && c != '\\') {
      out += c;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    }
  }
  out += '\'';
  if (text.size() > kMost) out += cat("... (", text.size(), " bytes)");
  return out;
}

std::string what_of_current() {
  try {
    throw;
  } catch (const std::exception& e) {
    // Never empty: callers take an empty text for "no problem".
    return *e.what() ? e.what() : "an exception with an empty message";
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace detail
}  // namespace kodo
