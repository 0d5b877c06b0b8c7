// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The check of a HIP call (hip/native.cpp): KODO_HIP_CHECK(hipSetDevice(device)). A
// failure throws kodo::Error naming the call as written, where it was made and HIP's
// reason.

#include <kodo/core/error.hpp>

#include <hip/hip_runtime.h>

#include <source_location>

namespace kodo::backend {

// Throws for a failed call; `call` names it (for a result the code looks at first, such
// as not ready or no device).
inline void check_hip(hipError_t e, const char* call,
                      std::source_location at = std::source_location::current()) {
  if (e != hipSuccess)
    throw Error(detail::call_failed("HIP", call, at.file_name(), static_cast<int>(at.line()),
                                    hipGetErrorString(e)));
}

}  // namespace kodo::backend

#define KODO_HIP_CHECK(call) ::kodo::backend::check_hip((call), #call)
