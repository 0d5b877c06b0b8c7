// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoints written (CheckpointWrite: each rank's file of its units, then the manifest,
// then the directory made the latest) and opened (Checkpoint::open). The files themselves:
// checkpoint_files.cpp; the manifest's text: checkpoint_manifest.cpp; a unit read back:
// checkpoint_read.cpp.
#include <kodo/tasking/checkpoints/checkpoint.hpp>

#include <kodo/backends/detail/tool_region.hpp>
#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/tasking/checkpoints/detail/checkpoint_files.hpp>
#include <kodo/tasking/checkpoints/detail/checkpoint_manifest.hpp>
#include <kodo/tasking/scheduling/detail/watchdog.hpp>
#include <kodo/tasking/units/detail/state_records.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>

namespace kodo {
namespace detail {

namespace fs = std::filesystem;

constexpr const char* kWritingPhase = "writing a checkpoint (kodo::write_checkpoint)";

CheckpointWrite::CheckpointWrite(Runtime& runtime, const std::string& dir,
                                 const CheckpointInfo& info)
    : runtime_(runtime), dir_(dir), info_(info), started_(MPI_Wtime()) {
  require_main_program(runtime, "write_checkpoint");
  const WatchdogPhase watching(RuntimeAccess::watchdog(runtime), kWritingPhase);
  std::string problem;
  long long number = 0;
  if (runtime.rank() == 0) {
    try {
      if (info.application.empty() ||
          info.application.find_first_of(" \t\r\n\v\f") != std::string::npos)
        throw Error(cat("a checkpoint's application name is one word, not '", info.application,
                        "'"));
      for (const auto& [key, value] : info.keys)
        if (key.empty() || key.find_first_of(" \t\r\n\v\f") != std::string::npos ||
            value.find_first_of("\r\n") != std::string::npos || value != trimmed(value))
          throw Error(cat("a checkpoint key is one word and its value one line, not '", key,
                          "' = '", value, "'"));
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw Error(cat("cannot create checkpoint directory ", dir, ": ", ec.message()));
      // The next number; leftovers of a checkpoint that was never completed go.
      for (const auto& entry : fs::directory_iterator(dir)) {
        bool partial = false;
        const std::int64_t n = checkpoint_number(entry.path().filename().string(), &partial);
        if (n < 0) continue;
        number = std::max<long long>(number, n + 1);
        if (partial && fs::exists(entry.path().string() + kMarker)) fs::remove_all(entry.path());
      }
      const std::string partial = cat(dir, "/checkpoint-", number, ".partial");
      if (!fs::create_directory(partial, ec))
        throw Error(cat("cannot create checkpoint directory ", partial, ": ",
                        ec ? ec.message() : "it exists"));
      OutputFile(partial + kMarker).close();
    } catch (...) {
      problem = what_of_current();
    }
  }
  detail::agree_and_report(runtime.comm(), problem);
  KODO_MPI_CHECK(MPI_Bcast(&number, 1, MPI_LONG_LONG, 0, runtime.comm()));
  final_ = cat(dir, "/checkpoint-", number);
  partial_ = final_ + ".partial";
}

CheckpointWrite::~CheckpointWrite() = default;

void CheckpointWrite::add_collection(std::uint32_t id, const Extent3& shape,
                                     const char* unit_type) {
  for (const auto& c : collections_)
    if (c.id == id) throw Error(cat("collection ", id, " is listed twice in a checkpoint"));
  // One word of the manifest's collection line.
  const std::string_view name(unit_type);
  if (name.empty() || name.size() > 200 ||
      std::any_of(name.begin(), name.end(), [](char ch) { return ch <= ' ' || ch > '~'; }))
    throw Error(
        cat("a unit type's checkpoint_name must be 1 to 200 printable characters "
            "without spaces, not ",
            detail::quoted_excerpt(name)));
  collections_.push_back({id, shape, unit_type, {}});
}

void CheckpointWrite::write_unit(std::uint32_t collection, std::int64_t linear,
                                 const std::function<void(StateWriter&)>& visit) {
  static const std::string region = "kodo::checkpoint write";
  const detail::ToolRegion here(region);
  if (!file_) {
    file_ = std::make_unique<OutputFile>(rank_file(partial_, runtime_.rank()));
    unit_checksum_ = std::make_unique<Xxh3>();
  }
  const std::uint64_t offset = file_->bytes();
  UnitOutput unit(*file_, *unit_checksum_);
  unit.write(kUnitMagic, sizeof kUnitMagic);
  unit.put(static_cast<std::uint32_t>(kFormat));
  unit.put(collection);
  unit.put(linear);
  RecordSink sink(unit, runtime_);
  StateWriter writer(sink);
  visit(writer);
  written_.push_back({collection, static_cast<std::uint32_t>(runtime_.rank()), linear, offset,
                      unit.bytes(), unit_checksum_->value()});
}

namespace {

struct FileEntry {  // a rank's file, as rank 0 gathers it
  std::uint64_t bytes = 0, checksum = 0, written = 0;
};

// Every rank's unit entries, on rank 0 (`counts`: each rank's bytes of them), each rank's
// count checked there before that many bytes are taken from it; every rank agrees on a
// problem. `all_units`: the units of the checkpoint's collections, which every rank knows
// (a sum of the ranks' own counts would let one rank's claim size rank 0's allocation).
// A job with more units than one MPI_Gatherv holds is refused first.
std::vector<ManifestUnit> gather_entries(MPI_Comm comm, int rank, int ranks,
                                         const std::vector<ManifestUnit>& written,
                                         std::uint64_t all_units, std::vector<int>& counts) {
  std::string problem;
  constexpr std::uint64_t kMostUnits = INT_MAX / sizeof(ManifestUnit);
  if (all_units > kMostUnits)
    problem = cat("a checkpoint holds at most ", kMostUnits,
                  " units (its index is gathered to rank 0 in one MPI message); this one has ",
                  all_units);
  detail::agree_and_report(comm, problem);
  int count = static_cast<int>(written.size() * sizeof(ManifestUnit));
  counts.assign(static_cast<std::size_t>(ranks), 0);
  std::vector<int> offsets(static_cast<std::size_t>(ranks));
  KODO_MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm));
  std::vector<ManifestUnit> all;
  if (rank == 0) {
    std::int64_t total = 0;
    for (int r = 0; r < ranks && problem.empty(); ++r) {
      if (counts[r] < 0 || counts[r] % static_cast<int>(sizeof(ManifestUnit)) != 0 ||
          total + counts[r] > static_cast<std::int64_t>(all_units * sizeof(ManifestUnit)))
        problem = cat("rank ", r, " reported ", counts[r], " bytes of checkpoint entries: not ",
                      "a whole number of entries within the ", all_units, " units written");
      offsets[r] = static_cast<int>(total), total += counts[r];
    }
    if (problem.empty()) all.resize(static_cast<std::size_t>(total) / sizeof(ManifestUnit));
  }
  detail::agree_and_report(comm, problem);
  KODO_MPI_CHECK(MPI_Gatherv(written.data(), count, MPI_BYTE, all.data(), counts.data(),
                             offsets.data(), MPI_BYTE, 0, comm));
  return all;
}

// Rank 0: each gathered entry names the rank that sent it.
void check_entry_senders(const std::vector<ManifestUnit>& all, const std::vector<int>& counts) {
  constexpr int kEntry = static_cast<int>(sizeof(ManifestUnit));
  for (std::size_t r = 0, at = 0; r < counts.size(); at += counts[r] / kEntry, ++r)
    for (int i = 0; i < counts[r] / kEntry; ++i)
      if (all[at + static_cast<std::size_t>(i)].rank != static_cast<std::uint32_t>(r))
        throw Error(cat("a checkpoint entry from rank ", r, " names rank ",
                        all[at + static_cast<std::size_t>(i)].rank, " as its writer"));
}

// Rank 0: the manifest and its stock checksums into `partial`, which becomes `final`,
// then named by D/latest; each step durable before the next.
void publish(const std::string& manifest, const std::map<std::uint32_t, SavedFile>& listed,
             const std::string& dir, const std::string& partial, const std::string& final) {
  OutputFile file(partial + "/manifest");
  file.write(manifest.data(), manifest.size());
  file.close();
  // The same checksums for a stock tool: cd D/checkpoint-N && xxhsum -c XXH3SUMS.
  std::string sums = cat(xxh3_text(file.checksum()), "  manifest\n");
  for (const auto& [r, f] : listed)
    sums += cat(xxh3_text(f.checksum), "  ", rank_file_name(r), '\n');
  OutputFile sums_file(partial + "/XXH3SUMS");
  sums_file.write(sums.data(), sums.size());
  sums_file.close();
  sync_directory(partial);
  rename_durably(partial, final, dir);
  const std::string name = fs::path(final).filename().string();
  // Left by a write that failed here before: removed (a link, not what it names).
  if (::unlink((dir + "/latest.partial").c_str()) != 0 && errno != ENOENT)
    throw Error(system_error("cannot remove", dir + "/latest.partial"));
  OutputFile latest(dir + "/latest.partial");
  const std::string line = cat(name, ' ', xxh3_text(file.checksum()), '\n');
  latest.write(line.data(), line.size());
  latest.close();
  rename_durably(dir + "/latest.partial", dir + "/latest", dir);
}

// Rank 0: the previous checkpoints (this code's own) are no longer needed; one that
// cannot be removed is left, with a warning: the new one is complete.
void remove_older(const std::string& dir, const std::string& final) {
  std::error_code ec;
  const std::string name = fs::path(final).filename().string();
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    bool partial = false;
    const std::string other = entry.path().filename().string();
    if (other == name || checkpoint_number(other, &partial) < 0 || partial ||
        !fs::exists(entry.path().string() + kMarker))
      continue;
    fs::remove_all(entry.path(), ec);
    if (ec)
      print_error(detail::cat("kodo: warning: the previous checkpoint ", entry.path().string(),
                              " was not removed: ", ec.message()));
  }
}

}  // namespace

CheckpointReport CheckpointWrite::finish(const std::string& problem_in) {
  // Watched while this rank waits for the others (not while rank 0 tidies up after).
  std::optional<WatchdogPhase> watching;
  watching.emplace(RuntimeAccess::watchdog(runtime_), kWritingPhase);
  MPI_Comm comm = runtime_.comm();
  // This rank's file made durable (one fsync per rank, not per unit); rank 0 makes the
  // directory entries durable after every rank's file is.
  std::string problem = problem_in;
  FileEntry mine;
  if (problem.empty() && file_) {
    try {
      file_->close();
      mine = {file_->bytes(), file_->checksum(), 1};
    } catch (...) {
      problem = what_of_current();
    }
  }
  RuntimeAccess::watchdog(runtime_).turned();  // this rank's own file is durable
  detail::agree_and_report(comm, problem);
  // Every rank's file and every unit's place, size and checksum, to rank 0.
  const int ranks = runtime_.size(), rank = runtime_.rank();
  std::vector<FileEntry> files(rank == 0 ? static_cast<std::size_t>(ranks) : 0);
  KODO_MPI_CHECK(MPI_Gather(&mine, sizeof mine, MPI_BYTE, files.data(), sizeof mine, MPI_BYTE, 0,
                            comm));
  std::vector<int> counts;
  std::uint64_t all_units = 0;
  for (const auto& c : collections_) all_units += static_cast<std::uint64_t>(c.shape.size());
  const std::vector<ManifestUnit> all =
      gather_entries(comm, rank, ranks, written_, all_units, counts);
  std::string failed;
  if (rank == 0) {
    try {
      check_entry_senders(all, counts);
      std::map<std::uint32_t, SavedFile> listed;
      for (int r = 0; r < ranks; ++r)
        if (files[r].written)
          listed[static_cast<std::uint32_t>(r)] = {files[r].bytes, files[r].checksum};
      const std::string manifest = manifest_text(info_, ranks, listed, collections_, all);
      // What restore reads at most (checkpoint_files.hpp): a checkpoint no restore could
      // read is an error now rather than then.
      if (manifest.size() > kManifestLimit)
        throw Error(cat("the manifest of this checkpoint would be ", manifest.size(),
                        " bytes, more than the ", kManifestLimit,
                        " a restore reads: it holds too many units (", all.size(), ")"));
      publish(manifest, listed, dir_, partial_, final_);
    } catch (...) {
      failed = what_of_current();
    }
  }
  detail::agree_and_report(comm, failed);
  CheckpointReport report;
  report.path = final_;
  const double seconds = MPI_Wtime() - started_;
  KODO_MPI_CHECK(MPI_Allreduce(&seconds, &report.seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  unsigned long long bytes = 0, total = 0;
  for (const auto& u : written_) bytes += u.bytes;
  KODO_MPI_CHECK(MPI_Allreduce(&bytes, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm));
  report.bytes = total;
  watching.reset();
  if (rank == 0) remove_older(dir_, final_);  // no rank waits for this
  return report;
}

}  // namespace detail

using detail::cat;

namespace {

void broadcast_string(std::string& s, MPI_Comm comm) {
  unsigned long long length = s.size();
  KODO_MPI_CHECK(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm));
  s.resize(length);
  for (unsigned long long at = 0; at < length; at += 1 << 30) {
    const int n = static_cast<int>(std::min<unsigned long long>(length - at, 1 << 30));
    KODO_MPI_CHECK(MPI_Bcast(s.data() + at, n, MPI_CHAR, 0, comm));
  }
}

}  // namespace

Checkpoint Checkpoint::open(Runtime& runtime, const std::string& dir,
                            std::string_view application) {
  detail::require_main_program(runtime, "Checkpoint::open");
  const detail::WatchdogPhase watching(detail::RuntimeAccess::watchdog(runtime),
                                       "opening a checkpoint (kodo::Checkpoint::open)");
  Checkpoint c;
  c.runtime_ = &runtime;
  // Rank 0 reads which checkpoint is the latest, and its manifest, for every rank: they
  // all restore the same one.
  detail::LatestManifest m;
  std::string problem;
  if (runtime.rank() == 0) {
    try {
      m = detail::read_latest(dir);
    } catch (...) {
      problem = detail::what_of_current();
    }
  }
  detail::agree_and_report(runtime.comm(), problem);
  broadcast_string(m.name, runtime.comm());
  broadcast_string(m.text, runtime.comm());
  c.path_ = cat(dir, "/", m.name);
  detail::Manifest parsed = detail::parse_manifest(m.text, c.path_, application);
  c.kodo_version_ = std::move(parsed.kodo_version);
  c.ranks_ = parsed.ranks;
  c.keys_ = std::move(parsed.keys);
  c.collections_ = std::move(parsed.collections);
  c.files_ = std::make_shared<detail::CheckpointReader>(runtime, c.path_, std::move(parsed.files));
  return c;
}

const std::string& Checkpoint::value(std::string_view key) const {
  for (const auto& [k, v] : keys_)
    if (k == key) return v;
  throw Error(cat("checkpoint ", path_, " has no key '", key, "'"));
}

std::int64_t Checkpoint::integer(std::string_view key) const {
  const std::string& v = value(key);
  const auto n = detail::parse_whole<std::int64_t>(v);
  if (!n)
    throw Error(cat("checkpoint ", path_, ": key '", key, "' is ", detail::quoted_excerpt(v),
                    ", not an integer"));
  return *n;
}

const detail::SavedCollectionRecord& Checkpoint::find(std::uint32_t id, const char* name,
                                                      const char* typeid_name) const {
  for (const auto& r : collections_) {
    if (r.id != id) continue;
    if (r.unit_type != name && r.unit_type != typeid_name)
      throw Error(cat("checkpoint ", path_, " holds collection ", id, " with units of type ",
                      detail::quoted_excerpt(r.unit_type), ", not ", name));
    return r;
  }
  throw Error(cat("checkpoint ", path_, " holds no collection ", id));
}

}  // namespace kodo
