// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "messages.hpp"

#include <kodo/comm/channel.hpp>

#include <limits>

namespace fuzz {

using kodo::detail::cat;
using kodo::detail::Entry;
using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;

std::vector<std::uint64_t> handler_ids() {
  return {Entry<Fuzzed, &Fuzzed::values>::id,
          Entry<Fuzzed, &Fuzzed::text>::id,
          Entry<Fuzzed, &Fuzzed::nested>::id,
          Entry<Fuzzed, &Fuzzed::views>::id,
          Entry<Other, &Other::poke>::id,
          SumReducer::id,
          OtherSum::id,
          0,
          1,
          ~std::uint64_t{0}};
}

namespace {

template <auto M, class... A>
Incoming call(Context& c, const A&... args) {
  kodo::detail::Message m;
  Entry<Fuzzed, M>::serialize(m, args...);
  MessageHeader h{MessageKind::invoke, 0, Entry<Fuzzed, M>::id, 2 * c.self() + c.pick(0, 1),
                  c.peer()};
  Incoming in;
  in.target = h.target;
  in.effect = describe_call(args...);
  if (m.attachments.empty()) {
    in.header.resize(sizeof h);
    std::memcpy(in.header.data(), &h, sizeof h);
    in.data = m.payload;
  } else {  // arguments in the header, the views' memory as data
    h.flags = kodo::detail::kHasAttachments;
    in.header.resize(sizeof h + m.payload.size());
    std::memcpy(in.header.data(), &h, sizeof h);
    if (!m.payload.empty())
      std::memcpy(in.header.data() + sizeof h, m.payload.data(), m.payload.size());
    for (const auto& a : m.attachments) {
      const auto* p = static_cast<const std::byte*>(a.segment.data);
      in.data.insert(in.data.end(), p, p + a.segment.bytes);
    }
  }
  return in;
}

Incoming from_message(const kodo::detail::Message& m) {
  Incoming in;
  in.header.resize(sizeof m.header);
  std::memcpy(in.header.data(), &m.header, sizeof m.header);
  in.data = m.payload;
  return in;
}

}  // namespace

std::string describe_call(int a, double b, bool c) { return cat("values ", a, ' ', b, ' ', c); }
std::string describe_call(const std::string& s, const std::vector<int>& v) {
  std::string out = cat("text '", s, "'");
  for (int x : v) out += cat(' ', x);
  return out;
}
std::string describe_call(const std::vector<std::vector<double>>& v) {
  std::string out = "nested";
  for (const auto& row : v) {
    out += " [";
    for (double x : row) out += cat(' ', x);
    out += " ]";
  }
  return out;
}
std::string describe_call(const Kokkos::View<double*>& v, const Kokkos::View<int**>& w) {
  const auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  const auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, w);
  std::string out = cat("views ", hv.extent(0), ':');
  for (std::size_t i = 0; i < hv.extent(0); ++i) out += cat(' ', hv(i));
  out += cat(" | ", hw.extent(0), 'x', hw.extent(1), ':');
  // (An empty view may have any extent beside its zero one: only elements are walked.)
  for (std::size_t i = 0; hw.size() != 0 && i < hw.extent(0); ++i)
    for (std::size_t j = 0; j < hw.extent(1); ++j) out += cat(' ', hw(i, j));
  return out;
}

Incoming valid_call(Context& c, bool with_views) {
  if (with_views) {
    Kokkos::View<double*> v("v", c.pick(0, 16));
    Kokkos::View<int**> w("w", c.pick(0, 4), c.pick(0, 4));
    auto hv = Kokkos::create_mirror_view(v);
    auto hw = Kokkos::create_mirror_view(w);
    for (std::size_t i = 0; i < hv.extent(0); ++i) hv(i) = 0.25 * c.pick(-1000, 1000);
    for (std::size_t i = 0; i < hw.extent(0); ++i)
      for (std::size_t j = 0; j < hw.extent(1); ++j) hw(i, j) = c.pick(-1000, 1000);
    Kokkos::deep_copy(v, hv);
    Kokkos::deep_copy(w, hw);
    return call<&Fuzzed::views>(c, v, w);
  }
  switch (c.pick(0, 2)) {
    case 0: return call<&Fuzzed::values>(c, c.pick(-5, 5), 0.5 * c.pick(0, 9), c.pick(0, 1) == 1);
    case 1: {
      std::string s(static_cast<std::size_t>(c.pick(0, 40)), ' ');
      for (char& ch : s) ch = static_cast<char>(c.pick('a', 'z'));
      std::vector<int> v(static_cast<std::size_t>(c.pick(0, 9)));
      for (int& x : v) x = c.pick(-1000, 1000);
      return call<&Fuzzed::text>(c, s, v);
    }
    default: {
      std::vector<std::vector<double>> v(static_cast<std::size_t>(c.pick(0, 4)));
      for (auto& row : v) {
        row.resize(static_cast<std::size_t>(c.pick(0, 4)));
        for (double& x : row) x = 0.5 * c.pick(-100, 100);
      }
      return call<&Fuzzed::nested>(c, v);
    }
  }
}

Incoming valid_reduction(Context& c) {
  kodo::detail::Message m;
  m.header = {c.pick(0, 1) ? MessageKind::reduction_partial : MessageKind::reduction_result, 0,
              SumReducer::id, c.pick(0, 6), c.peer()};
  const std::int64_t v = c.pick(-100, 100);
  m.payload.resize(sizeof v);
  std::memcpy(m.payload.data(), &v, sizeof v);
  return from_message(m);
}

// About a link between one of the peer's units and one of ours, numbered consistently.
Incoming valid_link_message(Context& c) {
  const std::int64_t receiver = 2 * c.peer() + c.pick(0, 1), sender = 2 * c.self() + c.pick(0, 1);
  const std::int32_t port = c.pick(0, 2);
  const kodo::detail::LinkKey link{0, receiver, sender, port};
  const auto number = static_cast<std::uint32_t>(receiver * 8 + (sender % 2) * 4 + port);
  const auto epoch = static_cast<std::uint32_t>(c.pick(1, 3));
  if (c.pick(0, 1))
    return from_message(kodo::detail::announcement_message({link, number, epoch, c.pick(0, 1) == 1},
                                                           c.peer()));
  kodo::detail::RingMessage ring{link, number, epoch, kodo::detail::RingMessage::offer, 0, {}};
  ring.words = 64 * static_cast<std::uint64_t>(c.pick(0, 4));
  for (int b = c.pick(1, 3); b > 0; --b)
    ring.buffers.push_back({static_cast<std::uint64_t>(c.pick(0, 64)),
                            false,
                            4096 + 64 * static_cast<std::uint64_t>(ring.buffers.size()),
                            {}});
  return from_message(kodo::detail::ring_message(ring, c.peer()));
}

std::int64_t Context::edge() {
  static constexpr std::int64_t values[] = {0,
                                            1,
                                            -1,
                                            2,
                                            3,
                                            4,
                                            255,
                                            65536,
                                            std::numeric_limits<std::int32_t>::max(),
                                            std::numeric_limits<std::int64_t>::max(),
                                            std::numeric_limits<std::int64_t>::min()};
  return pick(0, 1) ? values[pick(0, 10)] : static_cast<std::int64_t>(word());
}

void mutate(Context& c, Incoming& in) {
  static const std::vector<std::uint64_t> ids = handler_ids();
  for (int n = c.pick(1, 4); n > 0; --n) {
    auto& b = c.pick(0, 2) ? in.header : in.data;
    switch (c.pick(0, 9)) {
      case 0:
        put(in.header, offsetof(MessageHeader, kind), static_cast<std::uint32_t>(c.edge()));
        break;
      case 1:
        put(in.header, offsetof(MessageHeader, collection),
            static_cast<std::uint32_t>(c.pick(0, 3)));
        break;
      case 2:
        put(in.header, offsetof(MessageHeader, handler),
            ids[static_cast<std::size_t>(c.pick(0, static_cast<int>(ids.size()) - 1))]);
        break;
      case 3: put(in.header, offsetof(MessageHeader, target), c.edge()); break;
      case 4:
        put(in.header, offsetof(MessageHeader, source_rank),
            static_cast<std::int32_t>(c.pick(0, 1) ? c.self() : c.edge()));
        break;
      case 5:
        put(in.header, offsetof(MessageHeader, flags), static_cast<std::uint32_t>(c.pick(0, 3)));
        break;
      case 6:  // a count or extent in the arguments set to an edge value
        if (b.size() >= 8)
          put(b, static_cast<std::size_t>(c.pick(0, static_cast<int>(b.size()) - 8)), c.edge());
        break;
      case 7:
        if (!b.empty())
          b[static_cast<std::size_t>(c.pick(0, static_cast<int>(b.size()) - 1))] ^=
              std::byte(1 << c.pick(0, 7));
        break;
      case 8:
        b.resize(b.empty() ? 0
                           : static_cast<std::size_t>(c.pick(0, static_cast<int>(b.size()) - 1)));
        break;
      default:
        b.resize(b.size() + static_cast<std::size_t>(c.pick(1, 24)), std::byte(c.pick(0, 255)));
        break;
    }
  }
}

Expect spoil_header(Context& c, Incoming& in) {
  MessageHeader h;
  std::memcpy(&h, in.header.data(), sizeof h);
  switch (c.pick(0, 6)) {
    case 0: {
      const auto bytes = static_cast<std::size_t>(c.pick(0, sizeof h - 1));
      in.header.resize(bytes);
      return Expect::refuse(cat("kodo: its header has ", bytes, " bytes, fewer than the ", sizeof h,
                                " of a message header"));
    }
    case 1: {
      static constexpr std::uint32_t kinds[] = {0, 4, 7, 8, 0xffffffffu};
      auto kind = kinds[c.pick(0, 4)];
      if (c.pick(0, 1)) kind = static_cast<std::uint32_t>(c.word() | 8);
      put(in.header, offsetof(MessageHeader, kind), kind);
      return Expect::refuse(
          kind == 4 ? "kodo: field kind is 4 (callback), which is local to a rank and never sent"
                    : cat("kodo: field kind is ", kind, ", not a message kind (1, 2, 3, 5 or 6)"));
    }
    case 2: {
      static constexpr std::int32_t ranks[] = {-1, 2, 3, std::numeric_limits<std::int32_t>::max(),
                                               std::numeric_limits<std::int32_t>::min()};
      const std::int32_t rank = c.pick(0, 1) ? c.self() : ranks[c.pick(0, 4)];
      put(in.header, offsetof(MessageHeader, source_rank), rank);
      return Expect::refuse(cat("kodo: field source_rank is ", rank,
                                ", not another rank of the job's 2"));
    }
    case 3: {
      const auto flags = static_cast<std::uint32_t>(c.word()) | 2u;
      put(in.header, offsetof(MessageHeader, flags), flags);
      return Expect::refuse(cat("kodo: field flags has unknown bits: ", flags));
    }
    case 4: {
      if (h.kind == MessageKind::invoke) break;  // a call's flag is its views' (left to prepare)
      put(in.header, offsetof(MessageHeader, flags), kodo::detail::kHasAttachments);
      return Expect::refuse(
          "kodo: field flags says views are attached to a message that is not an entry-method "
          "call");
    }
    case 5: {
      const std::int64_t target = c.pick(0, 1) ? -1 - c.pick(0, 9)
                                               : static_cast<std::int64_t>(c.word() | (1ull << 63));
      put(in.header, offsetof(MessageHeader, target), target);
      return Expect::refuse(cat("kodo: field target is ", target,
                                ", negative (a unit index or reduction round)"));
    }
    default: break;
  }
  // Over the wrong connection: this rank's own endpoint, or none.
  in.unnamed = c.pick(0, 1) == 0;
  in.connection = c.self();
  return Expect::refuse(
      in.unnamed ? "kodo: sender is unknown: it does not say which connection it came by "
                   "(sent without UCX's reply flag)"
                 : cat("kodo: field source_rank says rank ", c.peer(),
                       ", but it came over the connection of rank ", c.self()));
}

std::vector<std::string> message_refusals() {
  // (Each matches an error's whole text; N below: a number.)
  return {
      // Every message: its header (ucx_transport.cpp, wire.cpp), then its sender.
      R"(kodo: its header has \d+ bytes, fewer than the 32 of a message header)",
      R"(kodo: its header has \d+ bytes but field flags says no views are attached)",
      R"(kodo: field kind is \d+, not a message kind \(1, 2, 3, 5 or 6\))",
      R"(kodo: field kind is 4 \(callback\), which is local to a rank and never sent)",
      R"(kodo: field source_rank is -?\d+, not another rank of the job's 2)",
      R"(kodo: field flags has unknown bits: \d+)",
      R"(kodo: field flags says views are attached to a message that is not an entry-method call)",
      R"(kodo: field target is -\d+, negative \(a unit index or reduction round\))",
      R"(kodo: sender is unknown: it does not say which connection it came by \(sent without UCX's reply flag\))",
      R"(kodo: field source_rank says rank \d+, but it came over the connection of rank \d+)",
      R"(kodo: its arguments take \d+ bytes, more than kodo's bound of 1073741824)",
      // What it names (scheduler.cpp, registry.cpp).
      R"(kodo: field collection is \d+; rank \d+ has \d+ collection\(s\))",
      R"(kodo: field target is \d+, outside collection \d+ of \d+ units)",
      R"(kodo: field target names unit \(\d+,\d+,\d+\) of collection \d+, which rank \d+ does not hold)",
      R"((kodo: reduction for collection \d+: )?(kodo: )?field handler is \d+, which names no (entry method|reducer) of this program)",
      R"((kodo: reduction for collection \d+: )?(kodo: )?field handler names (entry method|reducer) fuzz::\w+::\w+(, \w+)?( where an? (entry method|reducer) belongs|, which belongs to another unit type than the collection's))",
      // Arguments (serialize.hpp, entry.hpp).
      R"(kodo: a message's arguments end after \d+ bytes; reading \d+ more at offset \d+)",
      R"(kodo: a (vector|string) argument claims \d+ elements but only \d+ bytes of arguments remain)",
      R"(kodo: a bool argument holds \d+, not 0 or 1)",
      R"(kodo: a call's arguments are \d+ bytes longer than the parameters of fuzz::\w+::\w+)",
      R"(kodo: a view argument of \d+ bytes (arrived in a message that carries no view data|exceeds the \d+ bytes of view data left in the message))",
      R"(kodo: a view argument's extent \d+ in dimension \d makes it larger than kodo's bound of 274877906944 bytes)",
      R"(kodo: a call carries \d+ bytes of view data; its arguments describe \d+)",
      R"(kodo: it carries \d+ bytes of view data, more than kodo's bound of 274877906944)",
      // Reductions (reductions.cpp).
      R"(kodo: a reduction value for collection \d+ carries \d+ bytes; the reducer's values take \d+)",
      R"(kodo: field source_rank of a reduction (partial|result) is -?\d+, not (a child|the parent) of rank \d+ in the reduction tree of collection \d+)",
      R"(kodo: field target names reduction round \d+ of collection \d+, (which this rank has already passed on|whose result this rank does not await))",
      R"(kodo: rank \d+ sent a second partial for reduction round \d+ of collection \d+)",
      R"(kodo: units or ranks contributed to reduction round \d+ of collection \d+ with different types, operations or targets)",
      R"(kodo: reduction round \d+ of collection \d+ is \d+ rounds ahead of round \d+, the oldest rank \d+ has not delivered; kodo holds at most 65536 rounds of a collection at once)",
      // Channel links and same-node rings (link_messages.cpp, scheduler.cpp).
      R"(kodo: field length of a channel link announcement is \d+ bytes of arguments, not \d+)",
      R"(kodo: field handler of a channel link announcement is \d+, beyond the 2\^32 - 1 link numbers a rank gives)",
      R"(kodo: field port of a channel link announcement is -\d+, negative)",
      R"(kodo: field epoch of a channel link announcement is 0 \(openings count from 1\))",
      R"(kodo: field ring_may_follow of a channel link announcement is \d+, not 0 or 1)",
      R"(kodo: field handler: rank \d+ numbered the channel link from unit \d+ to unit \d+ \(collection \d+, port -?\d+\) \d+, and \d+ before)",
      R"(kodo: field receiver of a channel link announcement from rank \d+ names unit -?\d+, which that rank does not hold)",
      R"(kodo: field (length|handler|route|port|epoch|target|count|words|kind|capacity|place) of a same-node ring message [^\n]+)",
      R"(kodo: field (sender|receiver) of a same-node ring message from rank \d+ names unit -?\d+, which that rank does not hold)",
      R"(kodo: field source_rank: rank \d+ sent a same-node ring message, but (it does not share this rank's node|this rank takes no same-node route))",
      R"(kodo: rank \d+ announced the most of the \d+ channel links [^\n]+)",
  };
}

}  // namespace fuzz
