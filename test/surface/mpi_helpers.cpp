// Must not compile: kodo's collective checks are kodo::detail, not names for programs.
#include <kodo/kodo.hpp>
void f(MPI_Comm comm) { kodo::agree_and_report(comm, ""); }
