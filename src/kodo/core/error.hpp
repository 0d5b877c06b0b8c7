// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// kodo's one error type, and how a failure that only one rank sees ends the whole job.
///
/// A kodo::Error is thrown where every rank reaches the same verdict (bad arguments,
/// collective checks) so that the program can unwind and exit non-zero. An error only
/// one rank can see (a malformed message, a lost peer, an exception escaping an entry
/// method) is fatal: it is reported and every rank of the job is aborted, because the
/// others would otherwise wait forever. (No MPI here: the backends include this header
/// with their own toolchains.)

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kodo {

/// kodo's one error type: bad arguments, misuse and failed collective checks, thrown
/// where every rank reaches the same verdict.
class Error : public std::runtime_error {
 public:
  /// `what` is prefixed with "kodo: " unless it starts with it.
  explicit Error(const std::string& what);
};

/// Prints "kodo: fatal error on rank R: what" and aborts every rank of the job.
[[noreturn]] void fatal(const std::string& what);

/// Prints `text` to standard error in one write, with a newline added if it has none.
/// Under mpiexec a message printed in pieces (printf writes in 128-byte pieces) can be
/// torn: the launcher holds back a piece that ends mid-line and may pass it on with the
/// rank's standard output.
void print_error(std::string_view text);

namespace detail {

// fatal() in two steps, for a rank that has something to do in between (tell a peer).
void print_fatal(const std::string& what);
[[noreturn]] void abort_job();

// Concatenates the arguments as an ostream would print them.
template <class... A>
std::string cat(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// Text that came from a peer rank, a file or the user, as an error message quotes it: in
// single quotes, at most 64 bytes (then "..." and its length), every byte other than
// printable ASCII, and the quote and backslash, as \xNN. A hostile sender cannot make a
// message huge, cut it (a NUL ends what()), or write control characters to a terminal.
std::string quoted_excerpt(std::string_view text);

// The message for a failed call into a library: "<library> call <call> failed at
// file:line: reason".
std::string call_failed(const char* library, const char* call, const char* file, int line,
                        const std::string& reason);

// Inside a catch block: what the exception being handled says (its what() for a
// std::exception), never empty.
std::string what_of_current();

}  // namespace detail
}  // namespace kodo
