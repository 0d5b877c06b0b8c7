#include <kodo/tasking/collection_base.hpp>

namespace kodo::detail {

BlockMap::BlockMap(std::int64_t units, int ranks)
    : units_(units), ranks_(ranks), base_(units / ranks), extra_(units % ranks) {}

int BlockMap::owner(std::int64_t linear) const {
  const std::int64_t big = extra_ * (base_ + 1);  // units held by the larger blocks
  if (linear < big) return static_cast<int>(linear / (base_ + 1));
  return static_cast<int>(extra_ + (linear - big) / base_);
}

std::int64_t BlockMap::first(int rank) const {
  return rank * base_ + (rank < extra_ ? rank : extra_);
}

std::int64_t BlockMap::count(int rank) const { return base_ + (rank < extra_ ? 1 : 0); }

CollectionBase::CollectionBase(std::uint32_t id, Extent3 shape, int rank, int ranks,
                               std::type_index unit_type)
    : id_(id),
      shape_(shape),
      unit_type_(unit_type),
      map_(shape.size(), ranks),
      first_local_(map_.first(rank)),
      local_count_(map_.count(rank)) {}

}  // namespace kodo::detail
