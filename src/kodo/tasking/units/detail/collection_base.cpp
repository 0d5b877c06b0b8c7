// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/units/detail/collection_base.hpp>

#include <kodo/core/error.hpp>

#include <algorithm>
#include <utility>

namespace kodo::detail {

UnitMap::UnitMap(std::int64_t units, int ranks)
    : units_(units), ranks_(ranks), base_(units / ranks), extra_(units % ranks) {
  counts_.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) counts_[static_cast<std::size_t>(r)] = base_ + (r < extra_);
  order_ranks();
}

UnitMap::UnitMap(std::vector<int> owners, int ranks, std::uint64_t epoch)
    : units_(static_cast<std::int64_t>(owners.size())),
      ranks_(ranks),
      epoch_(epoch),
      base_(0),
      extra_(0),
      owners_(std::move(owners)) {
  counts_.assign(static_cast<std::size_t>(ranks), 0);
  for (std::size_t l = 0; l < owners_.size(); ++l) {
    const int r = owners_[l];
    if (r < 0 || r >= ranks)
      throw Error(cat("a unit map gives unit ", l, " to rank ", r, ", outside the job's ", ranks,
                      " rank(s)"));
    ++counts_[static_cast<std::size_t>(r)];
  }
  order_ranks();
}

void UnitMap::order_ranks() {
  order_.clear();
  for (int pass = 0; pass < 2; ++pass)
    for (int r = 0; r < ranks_; ++r)
      if ((counts_[static_cast<std::size_t>(r)] > 0) == (pass == 0)) order_.push_back(r);
  holders_ = static_cast<int>(std::count_if(counts_.begin(), counts_.end(),
                                            [](std::int64_t n) { return n > 0; }));
  positions_.assign(static_cast<std::size_t>(ranks_), 0);
  for (int p = 0; p < ranks_; ++p)
    positions_[static_cast<std::size_t>(order_[static_cast<std::size_t>(p)])] = p;
}

int UnitMap::owner(std::int64_t linear) const {
  if (!owners_.empty()) return owners_[static_cast<std::size_t>(linear)];
  const std::int64_t big = extra_ * (base_ + 1);  // units held by the larger blocks
  if (linear < big) return static_cast<int>(linear / (base_ + 1));
  return static_cast<int>(extra_ + (linear - big) / base_);
}

std::vector<std::int64_t> UnitMap::units_of(int rank) const {
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(count(rank)));
  if (owners_.empty()) {
    const std::int64_t first = rank * base_ + (rank < extra_ ? rank : extra_);
    for (std::int64_t i = 0; i < count(rank); ++i) mine.push_back(first + i);
  } else {
    for (std::size_t l = 0; l < owners_.size(); ++l)
      if (owners_[l] == rank) mine.push_back(static_cast<std::int64_t>(l));
  }
  return mine;
}

CollectionBase::CollectionBase(std::uint32_t id, Extent3 shape, int rank, int ranks,
                               std::type_index unit_type)
    : id_(id), shape_(shape), unit_type_(unit_type), rank_(rank), map_(shape.size(), ranks) {
  locals_ = map_.units_of(rank);
  loads_.resize(locals_.size());
}

namespace {
bool consecutive(const std::vector<std::int64_t>& v) {
  return v.empty() || v.back() - v.front() == static_cast<std::int64_t>(v.size()) - 1;
}
}  // namespace

std::int64_t CollectionBase::search(std::int64_t linear) const {
  const auto it = std::lower_bound(locals_.begin(), locals_.end(), linear);
  if (it == locals_.end() || *it != linear) return -1;
  return it - locals_.begin();
}

void CollectionBase::install(UnitMap map, std::vector<UnitLoad> loads) {
  map_ = std::move(map);
  locals_ = map_.units_of(rank_);
  contiguous_ = consecutive(locals_);
  loads_ = std::move(loads);
  loads_.resize(locals_.size());
}

}  // namespace kodo::detail
