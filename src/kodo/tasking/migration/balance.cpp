// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Balancers (pure functions of a BalanceInput), the test of whether a new map is worth
// moving units for, and the gathering of loads (balance.hpp).
#include <kodo/tasking/migration/balance.hpp>

#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <queue>
#include <utility>

namespace kodo {
namespace {

// Unit indices by load, heaviest first; ties by index, so every rank orders alike.
std::vector<std::size_t> heaviest_first(const std::vector<double>& loads) {
  std::vector<std::size_t> order(loads.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return loads[a] > loads[b]; });
  return order;
}

void check_input(const BalanceInput& in) {
  if (in.ranks < 1) throw Error(detail::cat("a balance needs at least one rank, not ", in.ranks));
  if (in.owners.size() != in.loads.size())
    throw Error(detail::cat("a balance input has ", in.loads.size(), " loads and ",
                            in.owners.size(), " owners"));
  for (std::size_t u = 0; u < in.loads.size(); ++u) {
    if (!(in.loads[u] >= 0) || !std::isfinite(in.loads[u]))
      throw Error(detail::cat("unit ", u, "'s load is ", in.loads[u],
                              ": loads are finite and not negative"));
    if (in.owners[u] < 0 || in.owners[u] >= in.ranks)
      throw Error(detail::cat("unit ", u, " is held by rank ", in.owners[u], ", outside the ",
                              in.ranks, " rank(s)"));
  }
}

}  // namespace

std::vector<double> rank_loads(const std::vector<double>& loads, const std::vector<int>& owners,
                               int ranks) {
  std::vector<double> per_rank(static_cast<std::size_t>(ranks), 0.0);
  for (std::size_t u = 0; u < loads.size(); ++u)
    per_rank[static_cast<std::size_t>(owners[u])] += loads[u];
  return per_rank;
}

double imbalance(const std::vector<double>& per_rank) {
  if (per_rank.empty()) return 0;
  const double total = std::accumulate(per_rank.begin(), per_rank.end(), 0.0);
  if (total <= 0) return 0;
  const double most = *std::max_element(per_rank.begin(), per_rank.end());
  return most / (total / static_cast<double>(per_rank.size())) - 1;
}

std::vector<int> greedy_balance(const BalanceInput& in) {
  check_input(in);
  // The least loaded rank on top; ties go to the lower rank.
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ranks;
  for (int r = 0; r < in.ranks; ++r) ranks.emplace(0.0, r);
  std::vector<int> owners(in.loads.size());
  for (const std::size_t u : heaviest_first(in.loads)) {
    auto [load, r] = ranks.top();
    ranks.pop();
    owners[u] = r;
    ranks.emplace(load + in.loads[u], r);
  }
  return owners;
}

std::vector<int> RefineBalance::operator()(const BalanceInput& in) const {
  check_input(in);
  if (!(tolerance >= 0)) throw Error(detail::cat("refine_balance's tolerance is ", tolerance));
  std::vector<int> owners = in.owners;
  std::vector<double> per_rank = rank_loads(in.loads, owners, in.ranks);
  const double total = std::accumulate(per_rank.begin(), per_rank.end(), 0.0);
  const double bound = total / in.ranks * (1 + tolerance);
  const std::vector<std::size_t> order = heaviest_first(in.loads);
  // The most loaded ranks first; each gives units away, heaviest first, to the least
  // loaded rank that stays within the bound, until it is within it.
  std::vector<int> by_load(static_cast<std::size_t>(in.ranks));
  std::iota(by_load.begin(), by_load.end(), 0);
  std::stable_sort(by_load.begin(), by_load.end(), [&](int a, int b) {
    return per_rank[static_cast<std::size_t>(a)] > per_rank[static_cast<std::size_t>(b)];
  });
  for (const int from : by_load) {
    double& mine = per_rank[static_cast<std::size_t>(from)];
    for (const std::size_t u : order) {
      if (mine <= bound) break;
      if (owners[u] != from || in.loads[u] <= 0) continue;
      int to = -1;
      for (int r = 0; r < in.ranks; ++r)
        if (r != from && per_rank[static_cast<std::size_t>(r)] + in.loads[u] <= bound &&
            (to < 0 ||
             per_rank[static_cast<std::size_t>(r)] < per_rank[static_cast<std::size_t>(to)]))
          to = r;
      if (to < 0) continue;
      owners[u] = to;
      mine -= in.loads[u];
      per_rank[static_cast<std::size_t>(to)] += in.loads[u];
    }
  }
  // Moves alone can leave the most loaded rank above the bound (two ranks holding 3 + 3
  // and 1 + 1 move nothing); then it swaps a unit with the least loaded rank, the pair
  // whose difference comes nearest half the two ranks' gap, while that lowers the most.
  for (std::size_t round = 0; round < std::min<std::size_t>(owners.size(), 64); ++round) {
    const auto most = std::max_element(per_rank.begin(), per_rank.end());
    const auto least = std::min_element(per_rank.begin(), per_rank.end());
    if (*most <= bound || most == least) break;
    const int from = static_cast<int>(most - per_rank.begin());
    const int to = static_cast<int>(least - per_rank.begin());
    const double half = (*most - *least) / 2;
    // The least loaded rank's units by load, to find for each unit u of the most loaded
    // the unit v whose load is nearest load(u) - half.
    std::vector<std::pair<double, std::size_t>> theirs;
    for (std::size_t v = 0; v < owners.size(); ++v)
      if (owners[v] == to) theirs.emplace_back(in.loads[v], v);
    std::sort(theirs.begin(), theirs.end());
    std::size_t best_u = owners.size(), best_v = owners.size();
    double best = half;  // |difference - half| of the best pair; must beat `half` itself
    for (std::size_t u = 0; u < owners.size(); ++u) {
      if (owners[u] != from) continue;
      const auto near = std::lower_bound(theirs.begin(), theirs.end(),
                                         std::make_pair(in.loads[u] - half, std::size_t{0}));
      for (auto it = near == theirs.begin() ? near : std::prev(near);
           it != theirs.end() && it <= near; ++it) {
        const double d = in.loads[u] - it->first;
        if (d <= 0 || d >= 2 * half) continue;
        if (std::abs(d - half) < best) best = std::abs(d - half), best_u = u, best_v = it->second;
      }
    }
    if (best_u == owners.size()) break;
    const double d = in.loads[best_u] - in.loads[best_v];
    std::swap(owners[best_u], owners[best_v]);
    *most -= d;
    *least += d;
  }
  return owners;
}

std::vector<int> rotate_balance(const BalanceInput& in) {
  check_input(in);
  std::vector<int> owners(in.owners.size());
  for (std::size_t u = 0; u < owners.size(); ++u) owners[u] = (in.owners[u] + 1) % in.ranks;
  return owners;
}

Balancer balancer_named(std::string_view name) {
  if (name == "greedy") return greedy_balance;
  if (name == "refine") return refine_balance;
  if (name == "rotate") return rotate_balance;
  throw Error(detail::cat("unknown balancer '", name, "' (expected greedy, refine or rotate)"));
}

namespace detail {

void quiesce(Runtime& runtime, const char* call) {
  if (RuntimeAccess::running(runtime))
    throw Error(cat(call,
                    " is collective: the main program of every rank calls it between run() calls, "
                    "never an entry method"));
  runtime.run();
}

BalanceInput gather_loads(Runtime& runtime, CollectionBase& c,
                          const std::vector<std::uint64_t>& local_bytes) {
  const WatchdogPhase watching(RuntimeAccess::watchdog(runtime),
                               "gathering units' loads for a balancer (kodo::rebalance)");
  struct Entry {
    std::int64_t linear;
    double load;
    std::uint64_t bytes;
  };
  std::vector<Entry> mine;
  for (std::int64_t s = 0; s < c.local_count(); ++s) {
    mine.push_back({c.linear_of(s), c.load(s).value(), local_bytes[static_cast<std::size_t>(s)]});
    c.load(s).measured = 0;  // the next phase starts
  }
  const int ranks = runtime.size();
  const std::size_t units = static_cast<std::size_t>(c.shape().size());
  // Every unit's entry in one MPI_Allgatherv (int counts and offsets): more is refused on
  // every rank alike before anything is gathered.
  if (units > static_cast<std::size_t>(INT_MAX) / sizeof(Entry))
    throw Error(cat("a balancer gathers the loads of at most ", INT_MAX / sizeof(Entry),
                    " units (in one MPI message); collection ", c.id(), " has ", units));
  BalanceInput in;
  in.ranks = ranks;
  in.owners.resize(units);
  std::vector<int> expected(static_cast<std::size_t>(ranks));
  for (std::size_t l = 0; l < units; ++l) {
    in.owners[l] = c.map().owner(static_cast<std::int64_t>(l));
    ++expected[static_cast<std::size_t>(in.owners[l])];
  }
  int count = static_cast<int>(mine.size() * sizeof(Entry));
  std::vector<int> counts(static_cast<std::size_t>(ranks)),
      offsets(static_cast<std::size_t>(ranks));
  KODO_MPI_CHECK(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, runtime.comm()));
  // What another rank sends is checked before it is used: each rank's count is its units'
  // (every rank sees the same counts and entries, so every rank refuses the same way).
  for (int r = 0; r < ranks; ++r)
    if (counts[static_cast<std::size_t>(r)] !=
        expected[static_cast<std::size_t>(r)] * static_cast<int>(sizeof(Entry)))
      throw Error(cat("rank ", r, " sent ", counts[static_cast<std::size_t>(r)],
                      " bytes of loads for collection ", c.id(), ", not the ",
                      expected[static_cast<std::size_t>(r)] * sizeof(Entry),
                      " of the units the map gives it"));
  for (int r = 1; r < ranks; ++r)
    offsets[static_cast<std::size_t>(r)] = offsets[static_cast<std::size_t>(r - 1)] +
                                           counts[static_cast<std::size_t>(r - 1)];
  std::vector<Entry> all(units);
  KODO_MPI_CHECK(MPI_Allgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(),
                                offsets.data(), MPI_BYTE, runtime.comm()));
  in.loads.assign(units, -1.0);
  in.bytes.assign(units, 0);
  std::size_t at = 0;
  for (int r = 0; r < ranks; ++r)
    for (int k = 0; k < expected[static_cast<std::size_t>(r)]; ++k) {
      const Entry& e = all[at++];
      if (e.linear < 0 || static_cast<std::size_t>(e.linear) >= units ||
          in.owners[static_cast<std::size_t>(e.linear)] != r ||
          in.loads[static_cast<std::size_t>(e.linear)] >= 0)
        throw Error(cat("rank ", r, " sent the load of unit ", e.linear, " of collection ", c.id(),
                        ", which is not one of its units or comes twice"));
      if (!std::isfinite(e.load) || e.load < 0)
        throw Error(cat("rank ", r, " sent a load of ", e.load, " for unit ", e.linear,
                        " of collection ", c.id(), ": a load is finite and not negative"));
      in.loads[static_cast<std::size_t>(e.linear)] = e.load;
      in.bytes[static_cast<std::size_t>(e.linear)] = e.bytes;
    }
  return in;
}

bool on_every_rank(Runtime& runtime, bool mine) {
  int all = mine ? 1 : 0;
  KODO_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, runtime.comm()));
  return all == 1;
}

BalanceReport judge(const BalanceInput& input, std::vector<int> owners,
                    const BalanceOptions& options, double moving_seconds, bool measured) {
  BalanceReport r;
  if (owners.size() != input.owners.size())
    throw Error(cat("the balancer gave ", owners.size(), " owners for ", input.owners.size(),
                    " units"));
  for (std::size_t u = 0; u < owners.size(); ++u)
    if (owners[u] < 0 || owners[u] >= input.ranks)
      throw Error(cat("the balancer gave unit ", u, " to rank ", owners[u], ", outside the ",
                      input.ranks, " rank(s)"));
  const std::vector<double> before = rank_loads(input.loads, input.owners, input.ranks);
  const std::vector<double> after = rank_loads(input.loads, owners, input.ranks);
  r.before = imbalance(before);
  r.after = imbalance(after);
  std::uint64_t moving_bytes = 0;
  for (std::size_t u = 0; u < owners.size(); ++u)
    if (owners[u] != input.owners[u]) {
      ++r.moved;
      moving_bytes += input.bytes[u];
    }
  const double most_before = before.empty() ? 0 : *std::max_element(before.begin(), before.end());
  const double most_after = after.empty() ? 0 : *std::max_element(after.begin(), after.end());
  if (!options.always && r.before <= options.tolerance)
    r.why = cat("the loads are within the tolerance (max/avg - 1 = ", r.before,
                " <= ", options.tolerance, ")");
  else if (r.moved == 0)
    r.why = "the balancer moves no unit";
  else if (options.always)
    r.why = "";
  else if (most_after >= most_before)
    r.why = "the balancer's map does not lower the most loaded rank's load";
  else if (measured && moving_seconds > 0 && most_before - most_after <= moving_seconds)
    r.why = cat("moving ", r.moved, " unit(s) (", moving_bytes, " bytes) would take longer (",
                moving_seconds, " s, the last migration) than a phase gains (",
                most_before - most_after, " s)");
  r.applied = r.why.empty();
  if (!r.applied) {
    r.after = r.before;
    r.moved = 0;
    owners = input.owners;
  }
  r.input = input;
  r.owners = std::move(owners);
  return r;
}

}  // namespace detail
}  // namespace kodo
