// Must not compile: kodo.hpp does not define the scheduler.
#include <kodo/kodo.hpp>
unsigned long f() { return sizeof(kodo::detail::Scheduler); }
