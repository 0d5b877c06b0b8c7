// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The CUDA backend's check of a runtime or driver call (cuda/native.cpp, cuda/capture.cpp).

#include <kodo/core/error.hpp>

#include <cuda.h>
#include <cuda_runtime.h>

#include <source_location>

namespace kodo::backend {

// A failed call becomes an Error naming the call and where it was made.
inline void check(cudaError_t e, const char* call,
                  std::source_location at = std::source_location::current()) {
  if (e != cudaSuccess)
    throw Error(detail::call_failed("CUDA", call, at.file_name(), static_cast<int>(at.line()),
                                    cudaGetErrorString(e)));
}
inline void check(CUresult r, const char* call,
                  std::source_location at = std::source_location::current()) {
  if (r != CUDA_SUCCESS) {
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    throw Error(detail::call_failed("CUDA", call, at.file_name(), static_cast<int>(at.line()),
                                    s ? s : "unknown error"));
  }
}

}  // namespace kodo::backend
