#pragma once
#include <kodo/kodo.hpp>

// The runtime shared by every test of the process.
kodo::Runtime& test_runtime();
