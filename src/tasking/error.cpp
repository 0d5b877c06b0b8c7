#include "error.hpp"

#include "agree.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace kodo {

void agree_on_failure(MPI_Comm comm, const std::string& problem, const std::string& what_failed) {
  int failed = problem.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
  if (failed) throw Error(problem.rfind("kodo: ", 0) == 0 ? problem : "kodo: " + problem);
  if (any) throw Error("kodo: another rank " + what_failed + " (see its message)");
}

void fatal(const std::string& what) {
  int initialized = 0, finalized = 0, rank = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "kodo: fatal error on rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace kodo
