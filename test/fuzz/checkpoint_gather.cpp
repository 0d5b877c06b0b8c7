// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoint values rank 0 gathers from the peer (issue 54): each input is a checkpoint
// both ranks write (kodo::write_checkpoint), rank 1's count of entry bytes, its file's
// entry or its first unit's entry altered as it leaves it (this surface's own MPI_Gather
// and MPI_Gatherv, which alter nothing while another surface runs), the alteration chosen
// by rank 1 and told to rank 0 first. The first input is honest: rank 1 tells rank 0 the
// entries it sent, which every later input alters. Honest, or a place inside the file:
// taken; a writer, collection or unit that is not rank 1's to name, a place outside its
// file, no file, a count of bytes that is not whole entries within the units, more units
// claimed (its count of units written, this surface's MPI_Allreduce, and its count of
// bytes to match): refused on both ranks with exactly its error (rank 0 finds it; rank 1
// hears "rank 0: ...").

#include "fuzz.hpp"

#include <kodo/tasking/checkpoints/detail/checkpoint_manifest.hpp>

#include <array>
#include <filesystem>
#include <optional>

namespace {

using kodo::detail::ManifestUnit;
using FileEntry = std::array<std::uint64_t, 3>;  // bytes, checksum, written (checkpoint.cpp)

enum What : int {
  honest,
  writer,
  collection,
  unit_out,
  unit_twice,
  outside,
  no_file,
  file_short,
  count_bad,
  units_claimed,
  kWhats
};
struct Alteration {
  int what;
  std::int64_t value;
};

bool writing = false;                // rank 1, inside write_checkpoint
std::optional<Alteration> altering;  // ... and what it alters there
std::vector<ManifestUnit> entries_sent;
FileEntry file_sent{};

}  // namespace

extern "C" int MPI_Gather(const void* send, int count, MPI_Datatype type, void* receive,
                          int receive_count, MPI_Datatype receive_type, int root, MPI_Comm comm) {
  FileEntry file{};
  int bytes = 0;
  if (writing && type == MPI_BYTE && count == static_cast<int>(sizeof file)) {
    std::memcpy(&file_sent, send, sizeof file);
    file = file_sent;
    if (altering && altering->what == no_file) file[2] = 0;
    if (altering && altering->what == file_short)
      file[0] = static_cast<std::uint64_t>(altering->value);
    send = &file;
  }
  if (writing && type == MPI_INT && count == 1 && altering &&
      (altering->what == count_bad || altering->what == units_claimed)) {
    bytes = static_cast<int>(altering->value);
    if (altering->what == units_claimed) bytes *= static_cast<int>(sizeof(ManifestUnit));
    send = &bytes;
  }
  return PMPI_Gather(send, count, type, receive, receive_count, receive_type, root, comm);
}

// Rank 1's count of units written, were it summed over the ranks (issue 54: the sum bounded
// what rank 0 took from each rank, so a rank's claim sized rank 0's allocation).
extern "C" int MPI_Allreduce(const void* send, void* receive, int count, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm) {
  std::uint64_t units = 0;
  if (writing && altering && altering->what == units_claimed && type == MPI_UINT64_T &&
      count == 1 && op == MPI_SUM) {
    units = static_cast<std::uint64_t>(altering->value);
    send = &units;
  }
  return PMPI_Allreduce(send, receive, count, type, op, comm);
}

extern "C" int MPI_Gatherv(const void* send, int count, MPI_Datatype type, void* receive,
                           const int* counts, const int* offsets, MPI_Datatype receive_type,
                           int root, MPI_Comm comm) {
  std::vector<ManifestUnit> entries;
  if (writing && type == MPI_BYTE && count % static_cast<int>(sizeof(ManifestUnit)) == 0) {
    entries.resize(static_cast<std::size_t>(count) / sizeof(ManifestUnit));
    std::memcpy(entries.data(), send, static_cast<std::size_t>(count));
    entries_sent = entries;
    if (altering && !entries.empty()) {
      ManifestUnit& u = entries.front();
      const auto v = altering->value;
      if (altering->what == writer) u.rank = static_cast<std::uint32_t>(v);
      if (altering->what == collection) u.collection = static_cast<std::uint32_t>(v);
      if (altering->what == unit_out || altering->what == unit_twice) u.linear = v;
      if (altering->what == outside) u.offset = static_cast<std::uint64_t>(v);
    }
    send = entries.data();
  }
  return PMPI_Gatherv(send, count, type, receive, counts, offsets, receive_type, root, comm);
}

namespace fuzz {
namespace {

using kodo::detail::cat;

class Stored : public kodo::WorkUnit<Stored> {
 public:
  explicit Stored(const kodo::UnitInit<Stored>& init) : WorkUnit(init) {}
  template <class State>
  void state(State& s) {
    s("values", values_);
  }

 private:
  Kokkos::View<double*, Kokkos::HostSpace> values_{"values", 100};
};

// Rank 1's choice, given its honest entries `e` and file `f` (4 units in all, 2 a rank).
Alteration choose(Context& c, const std::vector<ManifestUnit>& e, const FileEntry& f) {
  const int what = c.pick(0, kWhats - 1);
  const auto any = c.edge();
  switch (what) {
    case writer: {
      const auto rank = static_cast<std::uint32_t>(any);
      return {what, rank == 1 ? 0 : rank};
    }
    case collection:
      return {what, static_cast<std::uint32_t>(any) == e[0].collection
                        ? e[0].collection + 1
                        : static_cast<std::uint32_t>(any)};
    case unit_out: return {what, c.pick(0, 1) ? -1 - (any & 0xffff) : 4 + (any & 0xffff)};
    case unit_twice: return {what, c.pick(0, 1)};  // rank 0's, gathered first
    case outside: return {what, static_cast<std::int64_t>(f[0] - e[0].bytes + 1 + (any & 0xffff))};
    case file_short: return {what, c.pick(0, static_cast<int>(e[0].offset + e[0].bytes) - 1)};
    case count_bad: {
      const int whole = static_cast<int>(sizeof(ManifestUnit));
      const int counts[] = {-whole, -1, 1, whole - 1, 2 * whole + 1, 3 * whole, 1 << 30};
      return {what, counts[c.pick(0, 6)]};
    }
    case units_claimed: return {what, 3 + (any & 0xffff)};  // entries, rank 0's 2 beside them
    default: return {what, 0};
  }
}

Expect expected(const Alteration& a, const std::vector<ManifestUnit>& e, const FileEntry& f,
                int self) {
  const auto refused = [&](const auto&... what) {
    return Expect::refuse(cat("kodo: ", self == 1 ? "rank 0: " : "", what...));
  };
  const std::string from = "a checkpoint entry from rank 1 ";
  const ManifestUnit& u = e[0];
  switch (a.what) {
    case writer:
      return refused(from, "names rank ", static_cast<std::uint32_t>(a.value), " as its writer");
    case collection:
      return refused(from, "names collection ", a.value, ", which the checkpoint does not hold");
    case unit_out:
      return refused(from, "names unit ", a.value, " of collection ", u.collection,
                     ", which has 4 units");
    case unit_twice:
      return refused(from, "names unit ", a.value, " of collection ", u.collection,
                     " a second time");
    case outside:
      return refused(from, "places the unit at bytes ", a.value, " to ", a.value, " + ", u.bytes,
                     " of a file of ", f[0]);
    case no_file: return refused(from, "places the unit in the file of rank 1, which wrote none");
    case file_short:
      return refused(from, "places the unit at bytes ", u.offset, " to ", u.offset, " + ", u.bytes,
                     " of a file of ", a.value);
    case count_bad:
      return refused("rank 1 reported ", a.value,
                     " bytes of checkpoint entries: not a whole number of entries within the 4 "
                     "units written");
    case units_claimed:
      return refused("rank 1 reported ", a.value * static_cast<std::int64_t>(sizeof(ManifestUnit)),
                     " bytes of checkpoint entries: not a whole number of entries within the 4 "
                     "units written");
    default: return Expect::accept();
  }
}

}  // namespace

Tally fuzz_checkpoint_gather(Context& c) {
  Tally t("checkpoint_gather", c.self(), {});
  auto units = kodo::Collection<Stored>::create(c.runtime, {4, 1, 1});
  const std::string dir = "fuzz_checkpoint_gather";
  if (c.self() == 0) std::filesystem::remove_all(dir);
  Told told;
  std::vector<ManifestUnit> e(2);
  FileEntry f{};
  for (bool first = true;; first = false) {
    if (!first && !told.more(c, t)) break;
    Alteration a{honest, 0};
    if (c.self() == 1 && !first) a = choose(c, e, f);
    a = told(a);
    t.check(first ? Expect::accept() : expected(a, e, f, c.self()), [&] {
      writing = c.self() == 1;
      if (writing && a.what != honest) altering = a;
      kodo::write_checkpoint(c.runtime, dir, {"fuzz", {}}, units);
    });
    writing = false;
    altering.reset();
    if (first) {  // rank 1's honest entries, for rank 0 to expect what their alterations get
      if (c.self() == 1) e = entries_sent, f = file_sent;
      MPI_Bcast(e.data(), static_cast<int>(e.size() * sizeof(ManifestUnit)), MPI_BYTE, 1,
                told.comm());
      f = told(f);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (c.self() == 0) std::filesystem::remove_all(dir);
  return t;
}

}  // namespace fuzz
