// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// Checkpoints of collections, and restarts from them on any number of ranks. Units declare
/// their state with a state() member (unit_state.hpp); every rank's main program writes and
/// reads between run() calls (collective):
/// ```
///   auto report = kodo::write_checkpoint(runtime, "ckpt", {"jacobi3d", {{"step", "20"}}}, blocks);
///   // A later job, on any number of ranks, after creating the collection again:
///   auto saved = kodo::Checkpoint::open(runtime, "ckpt", "jacobi3d");
///   saved.restore(blocks);  // each unit restores its own state; saved.integer("step"): 20
/// ```
/// A collection cut into other units is restored by the application, which maps old units
/// onto new ones (restore with a function; SavedCollection::read). Every failure throws
/// kodo::Error on every rank, naming the file. The files, the names of unit types, and why
/// a crash leaves the previous checkpoint intact: docs/architecture.md, "Checkpoints".

#include <kodo/core/detail/agree.hpp>
#include <kodo/core/error.hpp>
#include <kodo/core/index.hpp>
#include <kodo/tasking/scheduling/runtime.hpp>
#include <kodo/tasking/units/collection.hpp>
#include <kodo/tasking/units/unit_state.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kodo {

/// What the application records beside its units: its name (checked on restart) and
/// keys of its own (no spaces in a key, no line break in a value).
struct CheckpointInfo {
  std::string application;                                ///< checked on restart
  std::vector<std::pair<std::string, std::string>> keys;  ///< (key, value)
};

/// What writing a checkpoint took, the same on every rank.
struct CheckpointReport {
  std::string path;         ///< D/checkpoint-N
  std::uint64_t bytes = 0;  ///< of unit state, over all ranks
  double seconds = 0;       ///< from the call until latest names it, on the slowest rank
};

class Checkpoint;

namespace detail {

struct SavedUnit {
  std::uint32_t file = 0;  // the rank that wrote it: rank-<file>.state
  std::uint64_t offset = 0, bytes = 0, checksum = 0;
};
struct SavedCollectionRecord {
  std::uint32_t id = 0;
  Extent3 shape;
  std::string unit_type;
  std::vector<SavedUnit> units;  // by linear index
};

struct ManifestUnit;     // what the manifest records of a unit
class OutputFile;        // this rank's file
class Xxh3;              // a unit's checksum
class CheckpointReader;  // the files a restore reads

// One checkpoint being written: the parts that are not templates.
class CheckpointWrite {
 public:
  // Collective: rank 0 prepares D/checkpoint-N.partial.
  CheckpointWrite(Runtime& runtime, const std::string& dir, const CheckpointInfo& info);
  ~CheckpointWrite();
  void add_collection(std::uint32_t id, const Extent3& shape, const char* unit_type);
  // Writes one unit's state into this rank's file; `visit` walks its state().
  void write_unit(std::uint32_t collection, std::int64_t linear,
                  const std::function<void(StateWriter&)>& visit);
  // Collective: agrees on `problem` (empty: none on this rank), gathers the files'
  // checksums, writes the manifest and makes the checkpoint the latest.
  CheckpointReport finish(const std::string& problem);

 private:
  Runtime& runtime_;
  std::string dir_, partial_, final_;
  CheckpointInfo info_;
  std::vector<SavedCollectionRecord> collections_;
  std::vector<ManifestUnit> written_;
  std::unique_ptr<OutputFile> file_;  // opened at the first unit
  std::unique_ptr<Xxh3> unit_checksum_;
  double started_ = 0;
};

// The checksum the manifest keeps of each file and unit (and D/latest of the manifest):
// XXH3-64, as `xxhsum -H3` computes it.
std::uint64_t checkpoint_checksum(const void* data, std::uint64_t bytes);

// Throws kodo::Error naming `call` when it comes from inside run() (an entry method):
// checkpoints are collective calls of the main program.
void require_main_program(Runtime& runtime, const char* call);
// Collective: every rank learns the first rank's problem in restoring (agree_and_report),
// watched while it waits for the others.
void agree_on_restore(Runtime& runtime, const std::string& problem);

// The name a checkpoint records unit type U by: U::checkpoint_name, else typeid(U).name().
template <class U>
const char* checkpoint_name_of() {
  if constexpr (requires {
                  { U::checkpoint_name } -> std::convertible_to<const char*>;
                })
    return U::checkpoint_name;
  else
    return typeid(U).name();
}

// Reads one unit of a checkpoint from its rank file, checked, and restores `visit`'s
// fields from it.
void read_unit(CheckpointReader& files, const SavedCollectionRecord& collection,
               std::int64_t linear, const std::function<void(StateReader&)>& visit);

}  // namespace detail

/// Collective: writes the state of every unit of `collections` to a new checkpoint in
/// `dir` (created if missing), between run() calls. Returns once the checkpoint is
/// complete and named in D/latest.
template <class... U>
CheckpointReport write_checkpoint(Runtime& runtime, const std::string& dir,
                                  const CheckpointInfo& info, const Collection<U>&... collections) {
  static_assert(sizeof...(U) > 0, "kodo: a checkpoint holds at least one collection");
  detail::CheckpointWrite write(runtime, dir, info);
  std::string problem;
  try {
    auto one = [&]<class V>(const Collection<V>& c) {
      write.add_collection(c.id(), c.shape(), detail::checkpoint_name_of<V>());
      c.for_each_local([&](V& unit) {
        write.write_unit(c.id(), c.shape().linear(unit.index()),
                         [&](detail::StateWriter& s) { unit.state(s); });
      });
    };
    (one(collections), ...);
  } catch (...) {
    problem = detail::what_of_current();
  }
  return write.finish(problem);
}

/// One collection as a checkpoint holds it; valid while its Checkpoint is.
class SavedCollection {
 public:
  /// The shape the collection had when it was saved.
  const Extent3& shape() const { return record_->shape; }
  /// Restores `into`'s state() (any type with one, not only the unit type) from the
  /// saved state of unit `index`. Throws kodo::Error naming the file when it is missing,
  /// truncated, corrupted or holds other fields.
  template <class T>
  void read(const Index3& index, T& into) const {
    if (!record_->shape.contains(index))
      throw Error(detail::cat("unit ", index, " is outside the saved collection of shape ",
                              record_->shape));
    detail::read_unit(*files_, *record_, record_->shape.linear(index),
                      [&](detail::StateReader& s) { into.state(s); });
  }

 private:
  friend class Checkpoint;
  SavedCollection(detail::CheckpointReader* files, const detail::SavedCollectionRecord* record)
      : files_(files), record_(record) {}
  detail::CheckpointReader* files_;
  const detail::SavedCollectionRecord* record_;
};

/// A complete checkpoint, opened for a restart.
class Checkpoint {
 public:
  /// Collective: opens the latest complete checkpoint in `dir` and checks its manifest,
  /// which must be of this kodo's format and written by `application`.
  static Checkpoint open(Runtime& runtime, const std::string& dir, std::string_view application);

  const std::string& path() const { return path_; }  ///< D/checkpoint-N
  int ranks() const { return ranks_; }               ///< of the job that wrote it
  /// The kodo that wrote it: its version and commit ("0.2.0 0123456789ab"; the version
  /// alone for checkpoints written before kodo recorded its commit).
  const std::string& kodo_version() const { return kodo_version_; }
  /// The application's key; throws kodo::Error when it is absent (or, for integer(), not
  /// an integer).
  ///@{
  const std::string& value(std::string_view key) const;
  std::int64_t integer(std::string_view key) const;
  ///@}

  /// The saved collection with the id of `c` (the n-th created by the program); throws
  /// kodo::Error when the checkpoint has none or it holds another unit type.
  template <class U>
  SavedCollection collection(const Collection<U>& c) const {
    return SavedCollection(files_.get(),
                           &find(c.id(), detail::checkpoint_name_of<U>(), typeid(U).name()));
  }

  /// Collective: restores every local unit of `c` from its saved state; the unit grid
  /// must be the one saved.
  template <class U>
  void restore(const Collection<U>& c) const {
    require_main_program("Checkpoint::restore");
    const SavedCollection saved = collection(c);
    if (!(saved.shape() == c.shape()))
      throw Error(detail::cat(path_, " holds collection ", c.id(), " as ", saved.shape(),
                              " units, not ", c.shape(),
                              ": restore it with a function that maps old units onto new ones"));
    restore(c, [&](U& unit, const SavedCollection& s) { s.read(unit.index(), unit); });
  }
  /// Collective: calls f(U&, const SavedCollection&) for every local unit of `c`, to
  /// restore it from any saved units (a unit grid of another shape).
  template <class U, class F>
  void restore(const Collection<U>& c, F&& f) const {
    require_main_program("Checkpoint::restore");
    const SavedCollection saved = collection(c);
    std::string problem;
    try {
      c.for_each_local([&](U& unit) { f(unit, saved); });
    } catch (...) {
      problem = detail::what_of_current();
    }
    detail::agree_on_restore(*runtime_, problem);
  }

 private:
  // Collection `id`, whose unit type must be recorded as `name` or `typeid_name`.
  const detail::SavedCollectionRecord& find(std::uint32_t id, const char* name,
                                            const char* typeid_name) const;
  void require_main_program(const char* call) const {
    if (runtime_ == nullptr) throw Error(detail::cat(call, ": no checkpoint was opened"));
    detail::require_main_program(*runtime_, call);
  }

  Runtime* runtime_ = nullptr;
  std::string path_;
  int ranks_ = 0;
  std::string kodo_version_;
  std::vector<std::pair<std::string, std::string>> keys_;
  std::vector<detail::SavedCollectionRecord> collections_;
  std::shared_ptr<detail::CheckpointReader> files_;
};

}  // namespace kodo
