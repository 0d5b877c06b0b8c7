#pragma once
// The type-independent part of a collection: its id, shape, unit type and mapping onto
// ranks. The scheduler keeps these; Collection<U> adds the units themselves.

#include <kodo/core/index.hpp>

#include <cstdint>
#include <typeindex>

namespace kodo::detail {

// Units are mapped to ranks in contiguous blocks of linear indices; when the units do
// not divide evenly, the first (units % ranks) ranks hold one more.
class BlockMap {
 public:
  BlockMap(std::int64_t units, int ranks);
  int owner(std::int64_t linear) const;
  std::int64_t first(int rank) const;
  std::int64_t count(int rank) const;
  // Ranks that hold at least one unit: 0 .. active_ranks()-1.
  int active_ranks() const { return units_ < ranks_ ? static_cast<int>(units_) : ranks_; }
  int ranks() const { return ranks_; }

 private:
  std::int64_t units_;
  int ranks_;
  std::int64_t base_, extra_;
};

class CollectionBase {
 public:
  CollectionBase(std::uint32_t id, Extent3 shape, int rank, int ranks, std::type_index unit_type);
  virtual ~CollectionBase() = default;
  CollectionBase(const CollectionBase&) = delete;
  CollectionBase& operator=(const CollectionBase&) = delete;

  // The local unit at slot 0 .. local_count()-1, type-erased.
  virtual void* unit_at(std::int64_t slot) = 0;

  std::uint32_t id() const { return id_; }
  const Extent3& shape() const { return shape_; }
  const BlockMap& map() const { return map_; }
  std::type_index unit_type() const { return unit_type_; }
  std::int64_t first_local() const { return first_local_; }
  std::int64_t local_count() const { return local_count_; }
  // The local slot of the unit with linear index `linear`, or -1 when it is not held
  // here (any value, including ones outside the collection, is safe to ask about).
  std::int64_t slot_of(std::int64_t linear) const {
    if (linear < first_local_ || linear - first_local_ >= local_count_) return -1;
    return linear - first_local_;
  }

 private:
  std::uint32_t id_;
  Extent3 shape_;
  std::type_index unit_type_;
  BlockMap map_;
  std::int64_t first_local_, local_count_;
};

}  // namespace kodo::detail
