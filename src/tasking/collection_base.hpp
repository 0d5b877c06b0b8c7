#pragma once
// The type-independent part of a collection: its shape, its mapping onto ranks and the
// state of its reductions. The runtime keeps these; Collection<U> adds the unit type.

#include "index.hpp"
#include "registry.hpp"
#include "serialize.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace kodo {
class Runtime;
}

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

 private:
  std::int64_t units_;
  int ranks_;
  std::int64_t base_, extra_;
};

// One reduction round as seen by one rank: contributions of its own units, and the
// partial results of its children in the reduction tree over ranks.
struct ReductionRound {
  HandlerId reducer = 0;
  std::vector<std::optional<Bytes>> local;
  std::int64_t local_received = 0;
  std::array<std::optional<Bytes>, 2> children;
  int children_received = 0;
};

class CollectionBase {
 public:
  CollectionBase(Runtime& runtime, std::uint32_t id, Extent3 shape);
  virtual ~CollectionBase() = default;
  CollectionBase(const CollectionBase&) = delete;
  CollectionBase& operator=(const CollectionBase&) = delete;

  // The local unit at slot 0 .. local_count()-1, type-erased.
  virtual void* unit_at(std::int64_t slot) = 0;

  Runtime& runtime() const { return runtime_; }
  std::uint32_t id() const { return id_; }
  const Extent3& shape() const { return shape_; }
  const BlockMap& map() const { return map_; }
  std::int64_t first_local() const { return first_local_; }
  std::int64_t local_count() const { return local_count_; }
  // The local slot of a unit, or -1 when another rank holds it.
  std::int64_t slot_of(std::int64_t linear) const {
    const std::int64_t s = linear - first_local_;
    return s >= 0 && s < local_count_ ? s : -1;
  }

  // Reduction rounds this rank has heard of and not yet passed on.
  std::map<std::uint64_t, ReductionRound>& rounds() { return rounds_; }
  const std::map<std::uint64_t, ReductionRound>& rounds() const { return rounds_; }

  // Results are delivered to the units in round order, whatever order they arrive in.
  std::uint64_t next_result_round = 0;
  std::map<std::uint64_t, std::pair<HandlerId, Bytes>> early_results;

 private:
  Runtime& runtime_;
  std::uint32_t id_;
  Extent3 shape_;
  BlockMap map_;
  std::int64_t first_local_, local_count_;
  std::map<std::uint64_t, ReductionRound> rounds_;
};

}  // namespace kodo::detail
