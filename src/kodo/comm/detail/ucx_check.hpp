// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The check of a UCX call: KODO_UCX_CHECK(ucp_worker_create(context, &params, &worker)).
// A failure ends the job (fatal), naming the call as written, where it was made and UCX's
// reason: the transport cannot go on, and the other ranks would wait for it. For a call
// that returns a request (the ..._nbx calls) the check's value is the request (nullptr:
// done in place); an error pointer ends the job. Failures that arrive in a completion
// callback are reported there, each with what it was for.

#include <kodo/core/error.hpp>

#include <ucp/api/ucp.h>

#include <source_location>
#include <string>

namespace kodo::detail {

// Ends the job for a failed UCX call; `call` names it (for a status the code looked at
// first, or with words a stringified call lacks, such as the peer's rank).
[[noreturn]] inline void ucx_failed(ucs_status_t status, const std::string& call,
                                    std::source_location at = std::source_location::current()) {
  fatal(call_failed("UCX", call.c_str(), at.file_name(), static_cast<int>(at.line()),
                    ucs_status_string(status)));
}

inline void check_ucx(ucs_status_t status, const char* call,
                      std::source_location at = std::source_location::current()) {
  if (status != UCS_OK) ucx_failed(status, call, at);
}

inline ucs_status_ptr_t check_ucx(ucs_status_ptr_t request, const char* call,
                                  std::source_location at = std::source_location::current()) {
  if (UCS_PTR_IS_ERR(request)) ucx_failed(UCS_PTR_STATUS(request), call, at);
  return request;
}

}  // namespace kodo::detail

#define KODO_UCX_CHECK(call) ::kodo::detail::check_ucx((call), #call)
