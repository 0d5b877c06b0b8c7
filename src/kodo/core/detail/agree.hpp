// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// MPI in the core: checked MPI calls, and start-up failures that some ranks may hit
// where all must stop together.

#include <mpi.h>

#include <source_location>
#include <string>

namespace kodo::detail {

// Ends the job when an MPI call did not succeed, naming the call, where it was made
// and MPI's reason. kodo's communicators return errors (MPI_ERRORS_RETURN) so that
// they arrive here rather than abort inside MPI. kodo's sources call it through
// KODO_MPI_CHECK (core/detail/mpi_check.hpp), which names the call as written.
void check_mpi(int result, const char* call,
               std::source_location at = std::source_location::current());

// Collective over `comm`: every rank learns whether any has a `problem` (empty: none).
// One that has throws it as an Error, the others "kodo: another rank <what_failed>
// (see its message)".
void agree_on_failure(MPI_Comm comm, const std::string& problem, const std::string& what_failed);

// The same, where every rank should say what went wrong: the lowest rank with a problem
// has it sent to all, and each throws it as an Error ("rank R: <problem>" on the others).
void agree_and_report(MPI_Comm comm, const std::string& problem);

}  // namespace kodo::detail
