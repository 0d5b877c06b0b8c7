#include "reductions.hpp"

#include "../core/error.hpp"

#include <sstream>

namespace kodo::detail {

ReductionTree::ReductionTree(int rank, Post post) : rank_(rank), post_(std::move(post)) {}

void ReductionTree::check_value(const CollectionBase& c, HandlerId reducer,
                                std::size_t bytes) const {
  const std::size_t size = reducer_of(c, reducer).value_size;
  if (bytes != size)
    throw Error(cat("a reduction value for collection ", c.id(), " carries ", bytes,
                    " bytes; the reducer's values take ", size));
}

const ReducerHandler& ReductionTree::reducer_of(const CollectionBase& c, HandlerId id) const {
  std::string problem;
  const auto* r = static_cast<const ReducerHandler*>(find_handler(id, HandlerKind::reducer,
                                                                  c.unit_type(), problem));
  if (!r) throw Error(cat("reduction for collection ", c.id(), ": ", problem));
  return *r;
}

ReductionTree::Round& ReductionTree::open_round(CollectionBase& c, State& s, std::uint64_t round,
                                                HandlerId reducer) {
  auto [it, inserted] = s.open.try_emplace(round);
  Round& r = it->second;
  if (inserted) {
    r.reducer = reducer;
    r.local.resize(static_cast<std::size_t>(c.local_count()));
  } else if (r.reducer != reducer) {
    throw Error(cat("units or ranks contributed to reduction round ", round, " of collection ",
                    c.id(), " with different types, operations or targets"));
  }
  return r;
}

void ReductionTree::contribute(CollectionBase& c, std::int64_t slot, std::uint64_t round,
                               HandlerId reducer, Bytes value) {
  State& s = states_[c.id()];
  Round& r = open_round(c, s, round, reducer);
  r.local[static_cast<std::size_t>(slot)] = std::move(value);
  ++r.local_received;
  try_complete(c, s, round);
}

void ReductionTree::on_partial(CollectionBase& c, const MessageHeader& h, Bytes value) {
  State& s = states_[c.id()];
  const auto round = static_cast<std::uint64_t>(h.target);
  const int active = c.map().active_ranks();
  const int child = h.source_rank == 2 * rank_ + 1 ? 0 : h.source_rank == 2 * rank_ + 2 ? 1 : -1;
  if (child < 0 || h.source_rank >= active)
    throw Error(cat("field source_rank of a reduction partial is ", h.source_rank,
                    ", not a child of rank ", rank_, " in the reduction tree of collection ",
                    c.id()));
  if (round < s.next_result || s.passed_up.count(round))
    throw Error(cat("field target names reduction round ", round, " of collection ", c.id(),
                    ", which this rank has already passed on"));
  check_value(c, h.handler, value.size());
  Round& r = open_round(c, s, round, h.handler);
  if (r.children[static_cast<std::size_t>(child)])
    throw Error(cat("rank ", h.source_rank, " sent a second partial for reduction round ", round,
                    " of collection ", c.id()));
  r.children[static_cast<std::size_t>(child)] = std::move(value);
  ++r.children_received;
  try_complete(c, s, round);
}

void ReductionTree::try_complete(CollectionBase& c, State& s, std::uint64_t round) {
  auto it = s.open.find(round);
  Round& r = it->second;
  const int active = c.map().active_ranks();
  int expected_children = 0;
  for (int child : {2 * rank_ + 1, 2 * rank_ + 2}) expected_children += child < active;
  if (r.local_received < c.local_count() || r.children_received < expected_children) return;

  const ReducerHandler& reducer = reducer_of(c, r.reducer);
  Bytes acc;
  auto fold = [&](std::optional<Bytes>& v) {
    if (!v) return;
    if (acc.empty())
      acc = std::move(*v);
    else
      reducer.combine(acc, *v);
  };
  for (auto& v : r.local) fold(v);
  for (auto& v : r.children) fold(v);

  Message m;
  m.header = {rank_ == 0 ? MessageKind::reduction_result : MessageKind::reduction_partial, c.id(),
              r.reducer, static_cast<std::int64_t>(round), rank_};
  m.payload = std::move(acc);
  s.passed_up.emplace(round, r.reducer);
  s.open.erase(it);  // `r` goes with it
  post_(rank_ == 0 ? 0 : (rank_ - 1) / 2, std::move(m));
}

void ReductionTree::on_result(CollectionBase& c, const MessageHeader& h, Bytes value,
                              bool from_wire) {
  State& s = states_[c.id()];
  const auto round = static_cast<std::uint64_t>(h.target);
  if (from_wire) {
    if (rank_ == 0 || h.source_rank != (rank_ - 1) / 2)
      throw Error(cat("field source_rank of a reduction result is ", h.source_rank,
                      ", not the parent of rank ", rank_, " in the reduction tree of collection ",
                      c.id()));
    const auto awaited = s.passed_up.find(round);
    if (awaited == s.passed_up.end() || s.early.count(round))
      throw Error(cat("field target names reduction round ", round, " of collection ", c.id(),
                      ", whose result this rank does not await"));
    if (awaited->second != h.handler)
      throw Error(cat("field handler of the result of reduction round ", round, " of collection ",
                      c.id(), " names another reducer than the one this rank contributed to"));
    check_value(c, h.handler, value.size());
  }
  const int active = c.map().active_ranks();
  for (int child : {2 * rank_ + 1, 2 * rank_ + 2}) {
    if (child >= active) continue;
    Message copy;
    copy.header = h;
    copy.header.source_rank = rank_;
    copy.payload = value;
    post_(child, std::move(copy));
  }
  if (round != s.next_result) {
    s.early.emplace(round, std::make_pair(h.handler, std::move(value)));
    return;
  }
  s.passed_up.erase(round);
  ++s.next_result;
  deliver(c, h.handler, value);
  for (auto it = s.early.find(s.next_result); it != s.early.end();
       it = s.early.find(s.next_result)) {
    auto [handler, payload] = std::move(it->second);
    s.early.erase(it);
    s.passed_up.erase(s.next_result);
    ++s.next_result;
    deliver(c, handler, payload);
  }
}

void ReductionTree::deliver(CollectionBase& c, HandlerId reducer, const Bytes& value) {
  reducer_of(c, reducer).deliver(c, value);
}

std::uint64_t ReductionTree::pending_rounds() const {
  std::uint64_t n = 0;
  for (const auto& [id, s] : states_) n += s.open.size();
  return n;
}

std::string ReductionTree::describe_pending(int rank) const {
  std::ostringstream os;
  for (const auto& [id, s] : states_)
    for (const auto& [round, r] : s.open)
      os << "\n  rank " << rank << ": collection " << id << " round " << round << ": "
         << r.local_received << " of " << r.local.size() << " local units contributed";
  return os.str();
}

void ReductionTree::drop_pending() {
  for (auto& [id, s] : states_) s.open.clear();
}

}  // namespace kodo::detail
