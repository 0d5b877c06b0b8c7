// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A migration's records from the peer (issue 54): each input is a migration
// (kodo::migrate) in which the two ranks' units trade places, the records of the unit
// rank 1 sends (its state() as state_records.hpp writes it: a value, a view whose data
// travels apart, a sequence) altered as they leave it, through fuzz_receive's one
// MPI_Isend (migration_headers.cpp hands it to migration_send), the alteration chosen by
// rank 1 and told to rank 0 first. The header's byte count follows the altered records
// (but for records sent short of it), so that what is tried is the records themselves.
// Each check the receiver makes of them is tried (their length against the header, each
// record's name, kind, element size, rank, extents and byte count, the records' count,
// their views against the header's): honest records must be taken and the unit must
// arrive whole; each field made wrong must be refused on both ranks with exactly its
// error (rank 0 finds it; rank 1 hears it as "rank 0: ..."), a name the peer sent quoted
// in it escaped (a NUL and an ESC in it as \x00\x1b); randomly mutated bytes may be
// taken (the unit's view, which travels apart, whole) or refused with a listed error.
// Left out: records longer than their header gives (MPI ends the job on a message longer
// than its receive), and a header's claims about the views (migration_headers).

#include "fuzz.hpp"

#include <kodo/tasking/migration/detail/migration_impl.hpp>

#include <algorithm>
#include <optional>
#include <string_view>

namespace {

using kodo::detail::FieldKind;

std::int64_t step_of(std::int64_t x) { return 1000 + x; }
double grid_value(std::int64_t x, std::size_t i, std::size_t j) {
  return static_cast<double>(x * 100) + static_cast<double>(i * 6 + j);
}
std::vector<std::int32_t> history_of(std::int64_t x) {
  std::vector<std::int32_t> h(static_cast<std::size_t>(2 + x));
  for (std::size_t k = 0; k < h.size(); ++k) h[k] = static_cast<std::int32_t>(7 * x) + int(k);
  return h;
}

// A unit whose state has a field of each kind, the values its index gives.
class Recorded : public kodo::WorkUnit<Recorded> {
 public:
  explicit Recorded(const kodo::UnitInit<Recorded>& init) : WorkUnit(init) { reset(); }
  void reset() {
    step_ = step_of(index().x);
    for (std::size_t i = 0; i < grid_.extent(0); ++i)
      for (std::size_t j = 0; j < grid_.extent(1); ++j) grid_(i, j) = grid_value(index().x, i, j);
    history_ = history_of(index().x);
  }
  bool grid_whole() const {
    for (std::size_t i = 0; i < grid_.extent(0); ++i)
      for (std::size_t j = 0; j < grid_.extent(1); ++j)
        if (grid_(i, j) != grid_value(index().x, i, j)) return false;
    return true;
  }
  bool whole() const {
    return grid_whole() && step_ == step_of(index().x) && history_ == history_of(index().x);
  }
  template <class State>
  void state(State& s) {
    s("step", step_);
    s("grid", grid_);
    s("history", history_);
  }

 private:
  std::int64_t step_ = 0;
  Kokkos::View<double**, Kokkos::HostSpace> grid_{"grid", 4, 6};
  std::vector<std::int32_t> history_;
};

// Where the parts of a record lie in the unit's records.
struct Spot {
  std::uint64_t at, name, kind, element, rank, extents, bytes, data, end;
};
// Each record's name, element size and rank.
constexpr std::string_view kNames[] = {"step", "grid", "history"};
constexpr std::uint32_t kElement[] = {8, 8, 4}, kRank[] = {0, 2, 1};
constexpr std::uint64_t kGridBytes = 4 * 6 * 8;

// The records unit x's state() writes (in the format state_records.hpp gives) and where
// each record lies: written here, from the format, and compared with what rank 1 sends.
struct Model {
  std::vector<std::byte> bytes;
  std::vector<Spot> spots;
};
Model model(std::int64_t x) {
  Model m;
  auto& b = m.bytes;
  const auto put = [&](const auto& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + sizeof v);
  };
  const auto record = [&](std::string_view name, FieldKind kind, std::uint32_t element,
                          std::vector<std::int64_t> extents, std::uint64_t bytes,
                          const void* data) {
    Spot s{};
    s.at = b.size();
    put(static_cast<std::uint32_t>(name.size()));
    s.name = b.size();
    for (const char ch : name) b.push_back(static_cast<std::byte>(ch));
    s.kind = b.size();
    put(static_cast<std::uint8_t>(kind));
    s.element = b.size();
    put(element);
    s.rank = b.size();
    put(static_cast<std::uint32_t>(extents.size()));
    s.extents = b.size();
    for (const std::int64_t e : extents) put(e);
    s.bytes = b.size();
    put(bytes);
    s.data = b.size();
    if (data)
      b.insert(b.end(), static_cast<const std::byte*>(data),
               static_cast<const std::byte*>(data) + bytes);
    s.end = b.size();
    m.spots.push_back(s);
  };
  const std::int64_t step = step_of(x);
  const std::vector<std::int32_t> history = history_of(x);
  const auto n = static_cast<std::int64_t>(history.size());
  record(kNames[0], FieldKind::value, kElement[0], {}, 8, &step);
  record(kNames[1], FieldKind::view, kElement[1], {4, 6}, kGridBytes, nullptr);  // data apart
  record(kNames[2], FieldKind::sequence, kElement[2], {n}, 4 * history.size(), history.data());
  return m;
}

// The ways records are made wrong (`record`: which one; `at` and `value` as said).
enum Field : int {
  short_records,  // only the first `at` bytes sent, the header's count honest
  cut,            // the records end at `at`
  dropped,        // the record left out
  extra,          // the record again, at the end
  name_length,    // its name's length set to `value`, beyond the records or 4096
  name_text,      // its name's character `at` set to `value`, another letter
  name_control,   // its name's characters `at` and `at` + 1 set to NUL and ESC (0x1b)
  kind,           // its kind set to `value`, another (a view's: any other)
  element,        // its element size set to `value`, another
  rank,           // its rank set to `value`, above 8
  extent,         // its extent `at` set to `value`, another
  swapped,        // the view's two extents swapped (the same bytes)
  data_bytes,     // its byte count set to `value`: beyond the records, or another view size
  random_bytes,   // bytes mutated, inserted, removed (rank 1's own)
  kFieldCount
};

struct Alteration {
  int field = -1;  // -1: honest
  int record = 0;
  std::uint64_t at = 0, value = 0;
};

// Rank 1's records for the migration under way: honest as modelled, and as sent.
struct Altering {
  std::vector<std::byte> honest, sent;
  bool short_of_header = false;
  bool unlike = false;  // what kodo sent was not the model's records
};
std::optional<Altering> altering;

bool send_altered(const void* data, int count, MPI_Datatype type, int to, int tag, MPI_Comm comm,
                  int* rc) {
  if (!altering || type != MPI_BYTE) return false;
  if (tag == kodo::detail::kHeaderTag && count == static_cast<int>(sizeof(kodo::detail::Header))) {
    kodo::detail::Header h{};
    std::memcpy(&h, data, sizeof h);
    if (!altering->short_of_header) h.bytes = altering->sent.size();
    // Sent before this returns (the eager protocol copies it), as the caller's would be.
    *rc = PMPI_Send(&h, count, type, to, tag, comm);
    return true;
  }
  if (tag != kodo::detail::kDataTag) return false;
  const std::vector<std::byte>& honest = altering->honest;
  altering->unlike = static_cast<std::size_t>(count) != honest.size() ||
                     std::memcmp(data, honest.data(), honest.size()) != 0;
  const std::vector<std::byte>& sent = altering->sent;
  // No records: the receiver, told 0 bytes, waits for none.
  *rc = sent.empty() && !altering->short_of_header
            ? MPI_SUCCESS
            : PMPI_Send(sent.data(), static_cast<int>(sent.size()), type, to, tag, comm);
  return true;
}

}  // namespace

namespace fuzz {
namespace {

using kodo::detail::cat;

// Another value than `was`, from `draw`.
template <class T, class Draw>
T other_than(T was, Draw&& draw) {
  T v = was;
  while (v == was) v = static_cast<T>(draw());
  return v;
}

Alteration choose(Context& c, const Model& m) {
  Alteration a{c.pick(-1, kFieldCount - 1), c.pick(0, 2)};
  const Spot& s = m.spots[static_cast<std::size_t>(a.record)];
  const std::uint64_t size = m.bytes.size();
  const auto within = [&](std::uint64_t n) {
    return static_cast<std::uint64_t>(c.pick(0, int(n) - 1));
  };
  const auto beyond = [&](std::uint64_t from, int most) {
    return std::min<std::uint64_t>(from + 1 + (c.word() >> c.pick(64 - most, 63)), 0xffffffffu);
  };
  const auto read_u32 = [&](std::uint64_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, m.bytes.data() + at, sizeof v);
    return v;
  };
  switch (a.field) {
    case short_records:
    case cut: a.at = within(size); break;
    case name_length: a.value = beyond(std::min<std::uint64_t>(size - s.name, 4096), 32); break;
    case name_text: {
      a.at = within(kNames[static_cast<std::size_t>(a.record)].size());
      const auto was = static_cast<std::uint64_t>(m.bytes[s.name + a.at]);
      a.value = other_than(was, [&] { return 'a' + c.pick(0, 25); });
      break;
    }
    case name_control: a.at = within(kNames[static_cast<std::size_t>(a.record)].size() - 1); break;
    case kind:
      a.value = other_than(std::uint64_t{3}, [&] {
        return other_than(static_cast<std::uint64_t>(m.bytes[s.kind]),
                          [&] { return c.pick(0, 255); });
      });
      break;
    case element:
      a.value =
          other_than(read_u32(s.element), [&] { return static_cast<std::uint32_t>(c.edge()); });
      break;
    case rank: a.value = beyond(8, 32); break;
    case swapped: a.record = 1; break;
    case extent: {
      a.record = c.pick(1, 2);
      const Spot& e = m.spots[static_cast<std::size_t>(a.record)];
      a.at = within(read_u32(e.rank));
      std::int64_t was = 0;
      std::memcpy(&was, m.bytes.data() + e.extents + 8 * a.at, 8);
      a.value = static_cast<std::uint64_t>(other_than(was, [&] { return c.edge(); }));
      break;
    }
    case data_bytes:
      a.value = a.record == 1 ? other_than(kGridBytes, [&] { return c.edge(); })
                              : size - s.data + (c.word() >> c.pick(2, 63)) + 1;
      break;
    default: break;
  }
  return a;
}

// Random changes to `b`: 1 to 3 of bit flips, bytes, edge values, removals, insertions and
// cuts, anywhere.
void mutate(Context& c, std::vector<std::byte>& b) {
  for (int k = c.pick(1, 3); k > 0; --k) {
    const auto at = static_cast<std::size_t>(c.pick(0, static_cast<int>(b.size())));
    const bool inside = at < b.size();
    switch (c.pick(0, 5)) {
      case 0:
        if (inside) b[at] ^= static_cast<std::byte>(1 << c.pick(0, 7));
        break;
      case 1:
        if (inside) b[at] = static_cast<std::byte>(c.pick(0, 255));
        break;
      case 2: {
        const std::int64_t v = c.edge();
        const std::size_t n = c.pick(0, 1) ? 4 : 8;  // the low bytes (little-endian)
        if (at + n <= b.size()) std::memcpy(b.data() + at, &v, n);
        break;
      }
      case 3: b.erase(b.begin() + at, b.begin() + std::min(b.size(), at + c.pick(1, 16))); break;
      case 4:
        for (int n = c.pick(1, 16); n > 0; --n)
          b.insert(b.begin() + at, static_cast<std::byte>(c.pick(0, 255)));
        break;
      default: b.resize(at); break;
    }
  }
}

// The records rank 1 sends for `a`.
std::vector<std::byte> altered(Context& c, const Model& m, const Alteration& a) {
  std::vector<std::byte> b = m.bytes;
  const Spot& s = m.spots[static_cast<std::size_t>(a.record)];
  const auto set = [&](std::uint64_t at, auto v) { std::memcpy(b.data() + at, &v, sizeof v); };
  const auto at = [&](std::uint64_t n) { return b.begin() + static_cast<std::ptrdiff_t>(n); };
  switch (a.field) {
    case short_records:
    case cut: b.resize(a.at); break;
    case dropped: b.erase(at(s.at), at(s.end)); break;
    case extra:
      b.insert(b.end(), m.bytes.begin() + long(s.at), m.bytes.begin() + long(s.end));
      break;
    case name_length: set(s.at, static_cast<std::uint32_t>(a.value)); break;
    case name_text: b[s.name + a.at] = static_cast<std::byte>(a.value); break;
    case name_control:
      b[s.name + a.at] = std::byte{0};
      b[s.name + a.at + 1] = std::byte{0x1b};
      break;
    case kind: set(s.kind, static_cast<std::uint8_t>(a.value)); break;
    case element: set(s.element, static_cast<std::uint32_t>(a.value)); break;
    case rank: set(s.rank, static_cast<std::uint32_t>(a.value)); break;
    case extent: set(s.extents + 8 * a.at, static_cast<std::int64_t>(a.value)); break;
    case swapped: std::swap_ranges(at(s.extents), at(s.extents + 8), at(s.extents + 8)); break;
    case data_bytes: set(s.bytes, a.value); break;
    case random_bytes: mutate(c, b); break;
    default: break;
  }
  return b;
}

// What state_records.cpp calls a field of this kind in its errors.
std::string described(std::uint64_t kind, std::uint32_t element, std::uint32_t rank) {
  switch (static_cast<FieldKind>(kind)) {
    case FieldKind::value: return cat("a value of ", element, " bytes");
    case FieldKind::sequence: return cat("a sequence of ", element, " bytes");
    case FieldKind::view: return cat("a view of rank ", rank, " of ", element, "-byte values");
    default: return cat("an unknown kind of ", element, " bytes");
  }
}
const std::string kDescribed[] = {described(1, kElement[0], kRank[0]),
                                  described(3, kElement[1], kRank[1]),
                                  described(2, kElement[2], kRank[2])};

// What must become of `a` on rank `self`; `m`: the records of unit (`unit`,0,0) of
// collection `collection`, which rank 1 sends.
Expect expected(const Alteration& a, const Model& m, std::int64_t unit, std::uint32_t collection,
                int self) {
  const std::string to = cat("kodo: ", self == 1 ? "rank 0: " : "");
  // The records walked for their views (migration.cpp), then read by the unit's state().
  const std::string walked = cat(to, "the state of unit (", unit, ",0,0) sent by rank 1");
  const std::string read =
      cat(to, "the state of unit (", unit, ",0,0) of collection ", collection, " sent by rank 1");
  const auto r = static_cast<std::size_t>(a.record);
  const auto refuse = [](const auto&... text) { return Expect::refuse(cat(text...)); };
  // `saved`: the name as the error quotes it (a peer's bytes, escaped).
  const auto mismatch = [&](std::size_t field, const std::string& saved, const std::string& as) {
    return refuse(read, ": field ", field + 1, " is ", saved, " (", as,
                  "); the unit's state() reads '", kNames[field], "' (", kDescribed[field],
                  ") there");
  };
  const Expect no_view =
      refuse(walked, ": its records name 0 views of 0 bytes; its header 1 of ", kGridBytes);
  const Expect no_history =
      refuse(read, " holds 2 fields; the unit's state() reads more (field 'history')");
  const Expect ends_inside = refuse(walked, " ends inside a record");
  const Expect past = refuse(walked, ": a record extends past its end");
  const Expect views_over = refuse(walked, ": its records name views of more than the ", kGridBytes,
                                   " bytes its header gives");
  switch (a.field) {
    case -1: return Expect::accept();
    case short_records:
      return refuse(to, "the records of unit (", unit, ",0,0) of collection ", collection,
                    " from rank 1: ", a.at, " bytes arrived of a part its header gave ",
                    m.bytes.size());
    case cut:
      for (std::size_t k = 0; k < m.spots.size(); ++k) {
        const Spot& in = m.spots[k];
        if (a.at >= in.end) continue;
        if (a.at == in.at) return k < 2 ? no_view : no_history;  // the records before it whole
        if (a.at < in.name) return ends_inside;
        if (a.at < in.kind) return refuse(walked, ": a record has a malformed name");
        return a.at < in.data ? ends_inside : past;
      }
      return {};
    case dropped:
      if (r == 0) return mismatch(0, cat("'", kNames[1], "'"), kDescribed[1]);
      return r == 1 ? no_view : no_history;
    case extra:
      return r == 1 ? views_over : refuse(read, " holds more fields than the unit's state() reads");
    case name_length: return refuse(walked, ": a record has a malformed name");
    case name_text: {
      std::string saved(kNames[r]);
      saved[a.at] = static_cast<char>(a.value);
      return mismatch(r, cat("'", saved, "'"), kDescribed[r]);
    }
    case name_control: {  // escaped: the NUL does not cut the error, nor ESC reach a terminal
      const std::string_view name = kNames[r];
      return mismatch(r, cat("'", name.substr(0, a.at), "\\x00\\x1b", name.substr(a.at + 2), "'"),
                      kDescribed[r]);
    }
    case kind:  // the view's bytes, taken as data, reach past the history record
      if (r == 1) return past;
      return mismatch(r, cat("'", kNames[r], "'"), described(a.value, kElement[r], kRank[r]));
    case element:
    case extent:
      return refuse(read, ": field '", kNames[r],
                    "' has a malformed size or extends past the end of the state");
    case rank: return refuse(walked, ": a record has rank ", a.value);
    case swapped:
      return refuse(to,
                    "the state field 'grid' was saved with extent 6 in dimension 0; the "
                    "unit's view (grid) has 4");
    case data_bytes:
      if (r != 1) return past;
      if (a.value > kGridBytes) return views_over;
      return refuse(walked, ": its records name 1 views of ", a.value, " bytes; its header 1 of ",
                    kGridBytes);
    default: return {};  // random_bytes
  }
}

// Every error random records may get.
std::vector<std::string> refusals() {
  const std::string to = "kodo: (rank 0: )?";
  // A name is the peer's bytes, quoted: printable ASCII but the quote and backslash as they
  // are, other bytes as \xNN, at most 64 of them (then the name's length).
  const std::string quoted = R"('([ -&(-\[\]-~]|\\x[0-9a-f]{2}){0,64}'(\.\.\. \(\d+ bytes\))?)";
  const std::string walked = to + R"(the state of unit \([01],0,0\) sent by rank 1)";
  const std::string read = to +
                           R"(the state of unit \([01],0,0\) of collection \d+ sent by rank 1)";
  return {
      walked + " ends inside a record",
      walked + ": a record has a malformed name",
      walked + R"(: a record has rank \d+)",
      walked + ": a record extends past its end",
      walked + ": its records name views of more than the 192 bytes its header gives",
      walked + R"(: its records name \d+ views of \d+ bytes; its header 1 of 192)",
      read +
          R"( holds \d+ fields; the unit's state\(\) reads more \(field '(step|grid|history)'\))",
      read + R"( holds more fields than the unit's state\(\) reads)",
      read + ": field " + quoted + " has a malformed size or extends past the end of the state",
      read + R"(: field \d+ is )" + quoted +
          R"( \([^)]*\); the unit's state\(\) reads '(step|grid|history)' \([^)]*\) there)",
      to + R"(the state field 'grid' was saved with extent -?\d+ in dimension [01]; )"
           R"(the unit's view \(grid\) has [46])",
  };
}

// Whether `units` can still be used (a unit that failed to restore breaks its collection).
bool usable(const kodo::Collection<Recorded>& units) {
  try {
    units.for_each_local([](const Recorded&) {});
  } catch (const kodo::Error&) {
    return false;
  }
  return true;
}

}  // namespace

Tally fuzz_migration_records(Context& c) {
  Tally t("migration_records", c.self(), refusals());
  const auto create = [&] { return kodo::Collection<Recorded>::create(c.runtime, {2, 1, 1}); };
  auto units = create();
  std::vector<int> owners{0, 1};  // unit 0's rank, unit 1's
  Told told;
  migration_send = send_altered;
  while (told.more(c, t)) {
    const std::int64_t sent = owners[0] == 1 ? 0 : 1;  // the unit rank 1 holds
    const Model m = model(sent);
    Alteration a;
    if (c.self() == 1) a = choose(c, m);
    a = told(a);
    const std::vector<int> traded{owners[1], owners[0]};
    bool moved = false;
    t.check(expected(a, m, sent, units.id(), c.self()), [&] {
      // Honest records pass through it too: what kodo sends is checked against the model.
      if (c.self() == 1) altering = Altering{m.bytes, altered(c, m, a), a.field == short_records};
      kodo::migrate(units, traded);
      moved = true;
    });
    if (altering && altering->unlike) t.fail("rank 1 sent other records than the model's");
    altering.reset();
    if (!moved) {
      if (!usable(units)) units = create(), owners = {0, 1};
      continue;
    }
    owners = traded;
    units.for_each_local([&](Recorded& u) {
      // Random records taken may carry other values, but the view travels apart.
      const bool exact = c.self() == 1 || a.field != random_bytes;
      if (exact ? !u.whole() : !u.grid_whole())
        t.fail(cat("unit ", u.index().x, " arrived with other values"));
      u.reset();
    });
  }
  migration_send = nullptr;
  return t;
}

}  // namespace fuzz
