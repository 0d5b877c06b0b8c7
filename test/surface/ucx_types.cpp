// Must not compile: no UCX type reaches a program that includes kodo.hpp.
#include <kodo/kodo.hpp>
ucp_worker_h worker = nullptr;
