#include "error.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace kodo {

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
