// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// What jacobi3d throws for its own problems (a checkpoint of another run, a saved block
// or a face that does not fit), as any application on kodo would: kodo::Error comes only
// from kodo.

#include <stdexcept>

namespace jacobi {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace jacobi
