// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The check of a CUDA runtime or driver call (cuda/native.cpp, cuda/capture.cpp):
// KODO_CUDA_CHECK(cudaSetDevice(device)). A failure throws kodo::Error naming the call as
// written, where it was made and CUDA's reason.

#include <kodo/core/error.hpp>

#include <cuda.h>
#include <cuda_runtime.h>

#include <source_location>

namespace kodo::backend {

// Throws for a failed call; `call` names it (for a result the code looks at first, such
// as not ready or no device).
inline void check_cuda(cudaError_t e, const char* call,
                       std::source_location at = std::source_location::current()) {
  if (e != cudaSuccess)
    throw Error(detail::call_failed("CUDA", call, at.file_name(), static_cast<int>(at.line()),
                                    cudaGetErrorString(e)));
}
inline void check_cuda(CUresult r, const char* call,
                       std::source_location at = std::source_location::current()) {
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    throw Error(detail::call_failed("CUDA", call, at.file_name(), static_cast<int>(at.line()),
                                    s ? s : "unknown error"));
  }
}

}  // namespace kodo::backend

#define KODO_CUDA_CHECK(call) ::kodo::backend::check_cuda((call), #call)
