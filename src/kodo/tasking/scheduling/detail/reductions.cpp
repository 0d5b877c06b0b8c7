// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/scheduling/detail/reductions.hpp>

#include <kodo/core/error.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <utility>

namespace kodo::detail {
namespace {

// The type's name as the program spells it, for messages.
std::string type_name(const std::type_info& type) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr,
                                                                        nullptr, &status),
                                                    std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(type.name());
}

// Throws unless the results of `reducer` are of `type`; `asked` names who asks.
void check_result_type(const CollectionBase& c, std::uint64_t round, const ReducerHandler& reducer,
                       const std::type_info& type, const char* asked) {
  if (*reducer.result_type != type)
    throw Error(cat(asked, "<", type_name(type), "> for collection ", c.id(), ": reduction round ",
                    round, " has results of type ", type_name(*reducer.result_type)));
}

}  // namespace

ReductionTree::ReductionTree(int rank, Post post) : rank_(rank), post_(std::move(post)) {}

void ReductionTree::check_value(const CollectionBase& c, HandlerId reducer,
                                std::size_t bytes) const {
  const ReducerHandler& r = reducer_of(c, reducer);
  if (r.runtime_length && bytes % r.value_size != 0)
    throw Error(cat("a reduction value for collection ", c.id(), " carries ", bytes,
                    " bytes, not a whole number of the reducer's elements of ", r.value_size));
  if (!r.runtime_length && bytes != r.value_size)
    throw Error(cat("a reduction value for collection ", c.id(), " carries ", bytes,
                    " bytes; the reducer's values take ", r.value_size));
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
  s.collection = &c;
  check_window(c, s, round);
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

void ReductionTree::check_window(const CollectionBase& c, const State& s,
                                 std::uint64_t round) const {
  if (round - s.next_result >= kMaxRoundsAhead)
    throw Error(cat("reduction round ", round, " of collection ", c.id(), " is ",
                    round - s.next_result, " rounds ahead of round ", s.next_result,
                    ", the oldest rank ", rank_, " has not delivered; kodo holds at most ",
                    kMaxRoundsAhead, " rounds of a collection at once"));
}

void ReductionTree::contribute(CollectionBase& c, std::int64_t slot, std::uint64_t round,
                               HandlerId reducer, Bytes value) {
  if (slot < 0 || slot >= c.local_count())
    throw Error(cat("a reduction contribution names slot ", slot, "; rank ", rank_, " holds ",
                    c.local_count(), " unit(s) of collection ", c.id()));
  const Index3 unit = c.shape().delinear(c.linear_of(slot));
  if (value.size() > kMaxArgumentBytes)
    throw Error(cat("unit ", unit, " of collection ", c.id(), " contributed ", value.size(),
                    " bytes to reduction round ", round, ", more than kodo's bound of ",
                    kMaxArgumentBytes));
  check_value(c, reducer, value.size());
  State& s = states_[c.id()];
  const auto twice = [&] {
    return Error(cat("unit ", unit, " (slot ", slot, ") contributed twice to reduction round ",
                     round, " of collection ", c.id()));
  };
  if (round < s.next_result || s.passed_up.count(round)) throw twice();  // round passed on
  Round& r = open_round(c, s, round, reducer);
  auto& mine = r.local[static_cast<std::size_t>(slot)];
  if (mine) throw twice();
  mine = std::move(value);
  ++r.local_received;
  try_complete(c, s, round);
}

void ReductionTree::on_partial(CollectionBase& c, const MessageHeader& h, Bytes value) {
  State& s = states_[c.id()];
  const auto round = static_cast<std::uint64_t>(h.target);
  const UnitMap& map = c.map();
  const int from = h.source_rank >= 0 && h.source_rank < map.ranks() ? map.position(h.source_rank)
                                                                     : -1;
  const int me = map.position(rank_);
  const int child = from == 2 * me + 1 ? 0 : from == 2 * me + 2 ? 1 : -1;
  if (child < 0 || from >= map.holders())
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

void ReductionTree::check_shapes(const CollectionBase& c, std::uint64_t round,
                                 const Round& r) const {
  const std::size_t element = reducer_of(c, r.reducer).value_size;
  std::string first;
  std::size_t first_length = 0;
  for (std::size_t i = 0; i < r.local.size() + r.children.size(); ++i) {
    const bool local = i < r.local.size();
    const auto& v = local ? r.local[i] : r.children[i - r.local.size()];
    if (!v) continue;
    const std::string from =
        local ? cat("unit ", c.shape().delinear(c.linear_of(static_cast<std::int64_t>(i))))
              : cat("the partial of rank ", c.map().rank_at(2 * c.map().position(rank_) + 1 +
                                                            static_cast<int>(i - r.local.size())));
    const std::size_t length = v->size() / element;
    if (first.empty()) {
      first = from;
      first_length = length;
    } else if (length != first_length) {
      throw Error(cat("a reduction of mismatched shapes: round ", round, " of collection ", c.id(),
                      " combines ", first_length, " element(s) from ", first, " with ", length,
                      " from ", from));
    }
  }
}

void ReductionTree::try_complete(CollectionBase& c, State& s, std::uint64_t round) {
  auto it = s.open.find(round);
  Round& r = it->second;
  const UnitMap& map = c.map();
  const int me = map.position(rank_);
  int expected_children = 0;
  for (int child : {2 * me + 1, 2 * me + 2}) expected_children += child < map.holders();
  if (r.local_received < c.local_count() || r.children_received < expected_children) return;

  const ReducerHandler& reducer = reducer_of(c, r.reducer);
  if (reducer.runtime_length) check_shapes(c, round, r);
  Bytes acc;
  bool first = true;
  auto fold = [&](std::optional<Bytes>& v) {
    if (!v) return;
    if (first)
      acc = std::move(*v);
    else
      reducer.combine(acc, *v);
    first = false;
  };
  for (auto& v : r.local) fold(v);
  for (auto& v : r.children) fold(v);

  Message m;
  m.header = {me == 0 ? MessageKind::reduction_result : MessageKind::reduction_partial, c.id(),
              r.reducer, static_cast<std::int64_t>(round), rank_};
  s.passed_up.emplace(round, PassedUp{r.reducer, acc.size()});
  m.payload = std::move(acc);
  s.open.erase(it);  // `r` goes with it
  post_(me == 0 ? rank_ : map.rank_at((me - 1) / 2), std::move(m));
}

void ReductionTree::on_result(CollectionBase& c, const MessageHeader& h, Bytes value,
                              bool from_wire) {
  State& s = states_[c.id()];
  const auto round = static_cast<std::uint64_t>(h.target);
  if (from_wire) {
    const UnitMap& map = c.map();
    const int me = map.position(rank_);
    if (me == 0 || h.source_rank != map.rank_at((me - 1) / 2))
      throw Error(cat("field source_rank of a reduction result is ", h.source_rank,
                      ", not the parent of rank ", rank_, " in the reduction tree of collection ",
                      c.id()));
    const auto awaited = s.passed_up.find(round);
    const auto not_awaited = [&] {
      return Error(cat("field target names reduction round ", round, " of collection ", c.id(),
                       ", whose result this rank does not await"));
    };
    if (s.early.count(round)) throw not_awaited();
    if (me >= map.holders()) {
      // A rank without units passed nothing up: it awaits every round not yet delivered.
      if (round < s.next_result) throw not_awaited();
      check_window(c, s, round);
      check_value(c, h.handler, value.size());
    } else {
      if (awaited == s.passed_up.end()) throw not_awaited();
      if (awaited->second.reducer != h.handler)
        throw Error(cat("field handler of the result of reduction round ", round, " of collection ",
                        c.id(), " names another reducer than the one this rank contributed to"));
      check_value(c, h.handler, value.size());
      if (value.size() != awaited->second.bytes)
        throw Error(cat("the result of reduction round ", round, " of collection ", c.id(),
                        " carries ", value.size(), " bytes; this rank passed up ",
                        awaited->second.bytes));
    }
  }
  // Every rank of the job gets the result, units or none, for its main program.
  const int me = c.map().position(rank_);
  for (int position : {2 * me + 1, 2 * me + 2}) {
    if (position >= c.map().ranks()) continue;
    const int child = c.map().rank_at(position);
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
  deliver(c, s, round, h.handler, value);
  for (auto it = s.early.find(s.next_result); it != s.early.end();
       it = s.early.find(s.next_result)) {
    auto [handler, payload] = std::move(it->second);
    s.early.erase(it);
    const std::uint64_t next = s.next_result++;
    s.passed_up.erase(next);
    deliver(c, s, next, handler, payload);
  }
}

void ReductionTree::deliver(CollectionBase& c, State& s, std::uint64_t round, HandlerId reducer,
                            const Bytes& value) {
  const ReducerHandler& r = reducer_of(c, reducer);
  r.deliver(c, round, value);
  // Named rounds go to their name's watchers, the others to the by-type ones.
  // (Kept in place: its bytes' storage is reused round after round.)
  auto keep = [&](Latest& latest) {
    latest.round = round;
    latest.reducer = reducer;
    latest.value.assign(value.begin(), value.end());
  };
  if (r.name)
    keep(s.latest_named[std::type_index(*r.name)]);
  else
    keep(s.latest ? *s.latest : s.latest.emplace());
  for (auto& callback : s.callbacks) {
    if (callback.name ? !r.name || *r.name != *callback.name : r.name != nullptr) continue;
    check_result_type(c, round, r, *callback.type, "on_reduced");
    callback.call(round, value);
  }
}

void ReductionTree::on_reduced(const CollectionBase& c, const std::type_info& type,
                               ResultCallback callback, const std::type_info* name) {
  states_[c.id()].callbacks.push_back({&type, name, std::move(callback)});
}

const Bytes& ReductionTree::reduced(const CollectionBase& c, const std::type_info& type,
                                    const std::type_info* name) const {
  const auto it = states_.find(c.id());
  const Latest* found = nullptr;
  if (it != states_.end() && !name && it->second.latest) found = &*it->second.latest;
  if (it != states_.end() && name)
    if (const auto n = it->second.latest_named.find(std::type_index(*name));
        n != it->second.latest_named.end())
      found = &n->second;
  if (!found)
    throw Error(cat("reduced<", type_name(name ? *name : type), "> for collection ", c.id(),
                    ": no reduction round of it has completed on rank ", rank_));
  const Latest& latest = *found;
  check_result_type(c, latest.round, reducer_of(c, latest.reducer), type, "reduced");
  return latest.value;
}

std::uint64_t ReductionTree::pending_rounds() const {
  std::uint64_t n = 0;
  for (const auto& [id, s] : states_) n += s.open.size();
  return n;
}

std::string ReductionTree::describe_pending(int rank) const {
  std::ostringstream os;
  constexpr int kNamed = 8;  // units named per round; the rest are counted
  for (const auto& [id, s] : states_)
    for (const auto& [round, r] : s.open) {
      os << "\n  reduction round " << round << " of collection " << id << ": " << r.local_received
         << " of " << r.local.size() << " local units contributed";
      int named = 0;
      for (std::size_t slot = 0; slot < r.local.size(); ++slot) {
        if (r.local[slot]) continue;
        if (named++ < kNamed && s.collection)
          os << (named == 1 ? "; missing: unit " : ", unit ")
             << s.collection->shape()
                    .delinear(s.collection->linear_of(static_cast<std::int64_t>(slot)));
      }
      if (named > kNamed) os << " and " << named - kNamed << " more";
      if (!s.collection) continue;
      const UnitMap& map = s.collection->map();
      for (int c = 0; c < 2; ++c)
        if (const int child = 2 * map.position(rank) + 1 + c;
            child < map.holders() && !r.children[c])
          os << "; no partial yet from rank " << map.rank_at(child);
    }
  return os.str();
}

void ReductionTree::drop_pending() {
  for (auto& [id, s] : states_) s.open.clear();
}

}  // namespace kodo::detail
