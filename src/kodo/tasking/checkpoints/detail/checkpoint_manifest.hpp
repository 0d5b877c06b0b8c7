// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// A checkpoint's manifest (D/checkpoint-N/manifest) and the file naming the latest
// checkpoint (D/latest): the text that CheckpointWrite::finish writes and that
// Checkpoint::open parses, side by side. Internal to the checkpoint sources (not
// installed).

#include <kodo/tasking/checkpoints/checkpoint.hpp>
#include <kodo/tasking/checkpoints/detail/checkpoint_files.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kodo::detail {

// What the manifest records of one unit: where it lies in its rank's file.
struct ManifestUnit {
  std::uint32_t collection, rank;
  std::int64_t linear;
  std::uint64_t offset, bytes, checksum;
};

// The manifest of a checkpoint written by `ranks` ranks: every rank file of `files` (by
// rank; a rank without units writes none), then every unit of every collection in
// order. Throws kodo::Error if a unit is missing from `units`.
std::string manifest_text(const CheckpointInfo& info, int ranks,
                          const std::map<std::uint32_t, SavedFile>& files,
                          const std::vector<SavedCollectionRecord>& collections,
                          const std::vector<ManifestUnit>& units);

// What a manifest says.
struct Manifest {
  std::string kodo_version;
  int ranks = 0;
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::uint32_t, SavedFile> files;  // by rank
  std::vector<SavedCollectionRecord> collections;
};
// Parses the manifest of checkpoint directory `checkpoint`, every line checked (each
// unit's range inside its listed file, the units of a file covering it exactly, without
// overlap); throws kodo::Error naming the file and line, or the application that wrote
// it if it is not `application`. Every rank parses the same text and so reaches the same
// verdict.
Manifest parse_manifest(const std::string& text, const std::string& checkpoint,
                        std::string_view application);

// Rank 0's reading of D/latest and the manifest it names (checked against its checksum);
// a checkpoint of another format is refused here, naming both formats.
struct LatestManifest {
  std::string name, text;
};
LatestManifest read_latest(const std::string& dir);

}  // namespace kodo::detail
