#pragma once
// kodo: overdecomposed work units over Kokkos, MPI and UCX. Include this header.

#include "backends/stream.hpp"
#include "comm/channel.hpp"
#include "tasking/collection.hpp"
#include "tasking/completion_engine.hpp"
#include "tasking/decomposition.hpp"
#include "tasking/error.hpp"
#include "tasking/index.hpp"
#include "tasking/runtime.hpp"
#include "tasking/serialize.hpp"
