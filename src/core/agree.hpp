#pragma once
// Start-up failures that some ranks may hit where all must stop together.

#include <mpi.h>

#include <string>

namespace kodo {

// Collective over `comm`: every rank learns whether any has a `problem` (empty: none).
// One that has throws it as an Error, the others "kodo: another rank <what_failed>
// (see its message)".
void agree_on_failure(MPI_Comm comm, const std::string& problem, const std::string& what_failed);

}  // namespace kodo
