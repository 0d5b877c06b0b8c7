// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The steps of RankProgram::build before its graphs: each plan checked on its own, the
// transfers matched (within the rank they become copies; across ranks each rank checks
// those sent to its units), then a channel opened for each unit, peer and tag.
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/programs/detail/step_program_impl.hpp>

#include <set>

namespace kodo::detail {
namespace {

constexpr int kTagLimit = 1 << 30;  // a program's channels use ports 2^30 + tag

void complain(std::string& problem, const std::string& what) {
  if (problem.empty()) problem = what;
}

// Every rank's `outgoing` (by receiving rank) to the ranks it names: what this rank hears.
std::vector<SendRecord> exchange_sends(MPI_Comm comm,
                                       const std::vector<std::vector<SendRecord>>& outgoing) {
  std::vector<int> counts_out(outgoing.size()), counts_in(counts_out.size());
  for (std::size_t r = 0; r < outgoing.size(); ++r)
    counts_out[r] = static_cast<int>(outgoing[r].size() * sizeof(SendRecord));
  KODO_MPI_CHECK(MPI_Alltoall(counts_out.data(), 1, MPI_INT, counts_in.data(), 1, MPI_INT, comm));
  std::vector<int> displs_out(counts_out.size()), displs_in(counts_in.size());
  std::vector<SendRecord> flat_out, flat_in;
  int total_in = 0;
  for (std::size_t r = 0; r < outgoing.size(); ++r) {
    displs_out[r] = static_cast<int>(flat_out.size() * sizeof(SendRecord));
    flat_out.insert(flat_out.end(), outgoing[r].begin(), outgoing[r].end());
    displs_in[r] = total_in;
    total_in += counts_in[r];
  }
  flat_in.resize(static_cast<std::size_t>(total_in) / sizeof(SendRecord));
  KODO_MPI_CHECK(MPI_Alltoallv(flat_out.data(), counts_out.data(), displs_out.data(), MPI_BYTE,
                               flat_in.data(), counts_in.data(), displs_in.data(), MPI_BYTE, comm));
  return flat_in;
}

}  // namespace

// Each plan on its own: peers, tags, duplicates, the prime.
void RankProgram::Impl::check_plans(Receives& receives, std::string& problem) const {
  const int P = options.phases;
  for (std::size_t slot = 0; slot < units.size() && problem.empty(); ++slot) {
    const Unit& u = units[slot];
    for (int q = 0; q < P && problem.empty(); ++q) {
      const PlannedPhase& plan = u.phases[static_cast<std::size_t>(q)];
      auto check = [&](const PlannedTransfer& t, const char* verb) {
        if (!shape.contains(t.peer))
          complain(problem, cat(unit_name(u.index), " ", verb, " unit ", t.peer, " in phase ", q,
                                ", outside its collection of shape ", shape));
        else if (t.tag < 0 || t.tag >= kTagLimit)
          complain(problem, cat(unit_name(u.index), " ", verb, " unit ", t.peer, " in phase ", q,
                                " with tag ", t.tag, "; tags are 0 to 2^30 - 1"));
      };
      std::map<std::pair<std::int64_t, int>, int> seen;
      for (const PlannedTransfer& t : plan.sends) {
        check(t, "sends to");
        if (problem.empty() && seen[{shape.linear(t.peer), t.tag}]++ == 1)
          complain(problem,
                   cat(unit_name(u.index), " sends to unit ", t.peer, " twice with tag ", t.tag,
                       " in phase ", q, ": each transfer of a step needs its own tag"));
      }
      seen.clear();
      for (const PlannedTransfer& t : plan.receives) {
        check(t, "receives from");
        if (!problem.empty()) break;
        const std::int64_t from = shape.linear(t.peer);
        if (seen[{from, t.tag}]++ == 1)
          complain(problem,
                   cat(unit_name(u.index), " receives from unit ", t.peer, " twice with tag ",
                       t.tag, " in phase ", q, ": each transfer of a step needs its own tag"));
        receives[{u.linear, from, t.tag, q}] = {slot, &t};
      }
      if (problem.empty() && q != P - 1 && plan.primes)
        complain(problem, cat(unit_name(u.index), " declares prime() in phase ", q,
                              ": it belongs to the plan of the last phase (", P - 1,
                              "), whose send views it fills before the first step"));
      if (problem.empty() && q == P - 1 && !plan.sends.empty() && !plan.primes)
        complain(problem,
                 cat(unit_name(u.index), " sends in phase ", q,
                     ", the last: the receivers' first step (phase 0) reads those views, so "
                     "the plan of that phase declares prime() (with the work that fills them, "
                     "or none when they hold the data already)"));
    }
  }
}

// A rank's receive views never overlap: each transfer lands in memory of its own.
void RankProgram::Impl::check_receives_apart(const Receives& receives, std::string& problem) const {
  if (!problem.empty()) return;
  using Receive = Receives::const_iterator;
  std::vector<std::tuple<const std::byte*, const std::byte*, Receive>> spans;
  for (auto it = receives.begin(); it != receives.end(); ++it) {
    const auto& seg = it->second.second->view.segment;
    const auto* begin = static_cast<const std::byte*>(seg.data);
    if (seg.bytes != 0) spans.emplace_back(begin, begin + seg.bytes, it);
  }
  std::sort(spans.begin(), spans.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  auto describe = [&](Receive it) {
    const auto [receiver, sender, tag, q] = it->first;
    return cat(unit_name(shape.delinear(receiver)), "'s receive from unit ", shape.delinear(sender),
               " with tag ", tag, " in phase ", q, " (view '", it->second.second->view.label, "')");
  };
  for (std::size_t i = 1; i < spans.size() && problem.empty(); ++i)
    if (std::get<0>(spans[i]) < std::get<1>(spans[i - 1]))
      complain(problem,
               cat(describe(std::get<2>(spans[i - 1])), " and ", describe(std::get<2>(spans[i])),
                   " overlap in memory: each receive needs memory of its own"));
}

// Sends between units of this rank become copies; others are told to their receivers.
void RankProgram::Impl::match_sends_on_rank(const Receives& receives,
                                            std::vector<std::vector<SendRecord>>& outgoing,
                                            std::string& problem) {
  const int P = options.phases;
  auto next = [P](int q) { return (q + 1) % P; };
  std::set<std::tuple<std::int64_t, std::int64_t, int, int>> matched;
  for (std::size_t q = 0; q < copies.size(); ++q) {
    copies[q].resize(units.size());
    copy_receivers[q].resize(units.size());
    copy_senders[q].resize(units.size());
  }
  for (std::size_t slot = 0; slot < units.size() && problem.empty(); ++slot) {
    const Unit& u = units[slot];
    for (int q = 0; q < P && problem.empty(); ++q) {
      for (const PlannedTransfer& t : u.phases[static_cast<std::size_t>(q)].sends) {
        const std::int64_t to = shape.linear(t.peer);
        const int owner = map->owner(to);
        if (owner != rank) {
          outgoing[static_cast<std::size_t>(owner)]
              .push_back({u.linear, to, t.tag, q, static_cast<std::int64_t>(t.view.segment.bytes)});
          continue;
        }
        const auto key = std::make_tuple(to, u.linear, t.tag, next(q));
        const auto found = receives.find(key);
        if (found == receives.end()) {
          complain(problem,
                   cat(where(u.linear), " sends to ", where(to), " with tag ", t.tag, " in phase ",
                       q, ", but that unit receives nothing from it with tag ", t.tag, " in phase ",
                       next(q)));
          break;
        }
        const PlannedView& into = found->second.second->view;
        if (into.segment.bytes != t.view.segment.bytes) {
          complain(problem, cat(where(u.linear), " sends ", t.view.segment.bytes, " bytes to ",
                                where(to), " with tag ", t.tag, " in phase ", q,
                                ", which receives ", into.segment.bytes, " ('", into.label, "')"));
          break;
        }
        matched.insert(key);
        const auto phase = static_cast<std::size_t>(q);
        copies[phase][slot].push_back({into.segment.data, t.view.segment.data,
                                       t.view.segment.bytes});
        copy_receivers[phase][slot].push_back(found->second.first);
        copy_senders[phase][found->second.first].push_back(slot);
      }
    }
  }
  for (const auto& [key, found] : receives) {
    if (!problem.empty()) break;
    const auto [receiver, sender, tag, q] = key;
    if (map->owner(sender) == rank && !matched.count(key))
      complain(problem, cat(where(receiver), " receives from ", where(sender), " with tag ", tag,
                            " in phase ", q, ", but that unit sends nothing to it with tag ", tag,
                            " in phase ", (q + P - 1) % P));
  }
}

// What this rank sends to units of other ranks, checked by their ranks.
void RankProgram::Impl::match_sends_from_other_ranks(
    const Receives& receives, const std::vector<std::vector<SendRecord>>& outgoing,
    std::string& problem) const {
  const int P = options.phases;
  auto next = [P](int q) { return (q + 1) % P; };
  std::set<std::tuple<std::int64_t, std::int64_t, int, int>> remote_matched;
  for (const SendRecord& s : exchange_sends(comm, outgoing)) {
    if (!problem.empty()) break;
    const auto q = static_cast<int>(s.phase);
    const auto key = std::make_tuple(s.receiver, s.sender, static_cast<int>(s.tag), next(q));
    const auto found = receives.find(key);
    if (found == receives.end()) {
      complain(problem, cat(where(s.sender), " sends to ", where(s.receiver), " with tag ", s.tag,
                            " in phase ", q, ", but that unit receives nothing from it with tag ",
                            s.tag, " in phase ", next(q)));
    } else if (static_cast<std::int64_t>(found->second.second->view.segment.bytes) != s.bytes) {
      complain(problem, cat(where(s.sender), " sends ", s.bytes, " bytes to ", where(s.receiver),
                            " with tag ", s.tag, " in phase ", q, ", which receives ",
                            found->second.second->view.segment.bytes, " ('",
                            found->second.second->view.label, "')"));
    } else {
      remote_matched.insert(key);
    }
  }
  for (const auto& [key, found] : receives) {
    if (!problem.empty()) break;
    const auto [receiver, sender, tag, q] = key;
    if (map->owner(sender) != rank && !remote_matched.count(key))
      complain(problem, cat(where(receiver), " receives from ", where(sender), " with tag ", tag,
                            " in phase ", q, ", but that unit sends nothing to it with tag ", tag,
                            " in phase ", (q + P - 1) % P));
  }
}

// Channels for the transfers with other ranks. Opening one can fail on this rank alone
// (its link is open already: another program on the collection, or a unit's own
// channel on a port from 2^30): every rank then hears of it.
void RankProgram::Impl::open_channels(RankProgram& program, const Receives& receives,
                                      std::string& problem) {
  const int P = options.phases;
  try {
    std::map<std::int64_t, std::size_t> slot_of;
    for (std::size_t slot = 0; slot < units.size(); ++slot) {
      const Unit& u = units[slot];
      slot_of[u.linear] = slot;
      for (int q = 0; q < P; ++q)
        for (const PlannedTransfer& t : u.phases[static_cast<std::size_t>(q)].sends) {
          const std::int64_t to = shape.linear(t.peer);
          if (map->owner(to) == rank) continue;
          RemoteLink& link = link_of(u.linear, to, t.tag);
          link.slot = slot;
          link.peer_phases.push_back((q + 1) % P);
          remote_sends[static_cast<std::size_t>(q)].push_back({&link, t.view});
        }
    }
    for (auto& [id, link] : links) std::sort(link->peer_phases.begin(), link->peer_phases.end());
    std::map<LinkId, std::vector<std::pair<int, const PlannedTransfer*>>> rings;
    for (const auto& [key, found] : receives) {
      const auto [receiver, sender, tag, q] = key;
      if (map->owner(sender) != rank) rings[{receiver, sender, tag}].emplace_back(q, found.second);
    }
    for (auto& [id, views] : rings) {  // phases ascending
      RemoteLink& link = link_of(id.local, id.remote, id.tag);
      link.slot = slot_of.at(id.local);
      start_ring(program, link, views);
    }
  } catch (...) {
    problem = cat("the step program of collection ", collection,
                  " could not open its channels: ", what_of_current(),
                  " (programs of one collection keep their tags apart; a unit's own channels take "
                  "ports below 2^29)");
  }
}

// The link between a local unit and a unit of another rank on a tag, opened the first time.
RankProgram::Impl::RemoteLink& RankProgram::Impl::link_of(std::int64_t local, std::int64_t remote,
                                                          int tag) {
  auto& link = links[{local, remote, tag}];
  if (!link) {
    link = std::make_unique<RemoteLink>();
    link->channel =
        Channel(*host, LinkSpec{collection, shape, shape.delinear(local), shape.delinear(remote),
                                map->owner(remote), kTagLimit + tag, channel_stream, options.comm});
    link->name = cat("the transfers from ", where(remote), " to unit ", shape.delinear(local),
                     " with tag ", tag);
  }
  return *link;
}

// The link's ring: its buffers are the receiving views (`views`, phases ascending); each
// transfer in counts towards the step that reads it.
void RankProgram::Impl::start_ring(
    RankProgram& program, RemoteLink& link,
    const std::vector<std::pair<int, const PlannedTransfer*>>& views) {
  std::vector<Segment> buffers;
  std::vector<std::shared_ptr<const void>> keep;
  for (const auto& [q, t] : views) {
    link.phases.push_back(q);
    link.bytes.push_back(t->view.segment.bytes);
    buffers.push_back(t->view.segment);
    keep.push_back(t->view.keep);
    remote_receives[static_cast<std::size_t>(q)].push_back(&link);
  }
  RemoteLink* in = &link;
  link.ring = link.channel.start_ring(
      std::move(buffers), std::make_shared<std::vector<std::shared_ptr<const void>>>(keep), 1,
      [self = &program, in, alive = std::weak_ptr<bool>(this->alive)](std::uint64_t transfer,
                                                                      std::size_t bytes,
                                                                      std::size_t buffer) {
        if (alive.expired()) return;
        if (bytes != in->bytes[buffer])
          throw Error(cat(in->name, ": transfer ", transfer, " brought ", bytes,
                          " bytes into a view of ", in->bytes[buffer]));
        const auto uses = static_cast<std::int64_t>(in->phases.size());
        const auto t = static_cast<std::int64_t>(transfer);
        const std::int64_t step = t / uses * self->impl_->options.phases +
                                  in->phases[static_cast<std::size_t>(t % uses)];
        ++self->impl_->arrived[step];
        self->pump();
      });
}

}  // namespace kodo::detail
