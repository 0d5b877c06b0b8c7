#pragma once
// Errors. A kodo::Error is thrown where every rank reaches the same verdict (bad
// arguments, collective checks) so the program can unwind and exit non-zero. An error
// only one rank can see (a broken peer, a message for a unit that does not exist, an
// exception escaping an entry method) is fatal: it is reported and the whole job is
// aborted, because the other ranks would otherwise wait forever.

#include <stdexcept>
#include <string>

namespace kodo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Prints "kodo: fatal error on rank R: what" and aborts every rank of the job.
[[noreturn]] void fatal(const std::string& what);

}  // namespace kodo
