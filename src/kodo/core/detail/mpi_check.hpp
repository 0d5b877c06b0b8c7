// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The check of an MPI call: KODO_MPI_CHECK(MPI_Barrier(comm)). A failure ends the job
// (fatal), naming the call as written, where it was made and MPI's reason. A macro so
// that the message quotes the call; internal, so that it is not a name users get.

#include <kodo/core/detail/agree.hpp>  // detail::check_mpi, which the macro calls

#define KODO_MPI_CHECK(call) ::kodo::detail::check_mpi((call), #call)
