#include "memory_kind.hpp"

namespace kodo {

const char* to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: return "host";
    case MemoryKind::cuda: return "cuda";
    case MemoryKind::cuda_managed: return "cuda-managed";
    case MemoryKind::rocm: return "rocm";
    case MemoryKind::rocm_managed: return "rocm-managed";
  }
  return "unknown";
}

}  // namespace kodo
