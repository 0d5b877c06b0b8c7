// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/tasking/checkpoints/detail/checkpoint_manifest.hpp>

#include <kodo/core/detail/numeric.hpp>
#include <kodo/tasking/checkpoints/detail/checkpoint_files.hpp>
#include <kodo/version.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>

namespace kodo::detail {

namespace {

// The refusal of a checkpoint in another format, the same from both places that see one
// (the file's words cut short: they may be anything).
Error other_format(const std::string& checkpoint, const std::string& format,
                   const std::string& written_by) {
  return Error(cat("checkpoint ", checkpoint, " is in format ", quoted_excerpt(format),
                   written_by.empty() ? ""
                                      : cat(" (written by kodo ", quoted_excerpt(written_by), ")"),
                   "; this kodo (", kodo::version(), ") reads format ", kFormat,
                   " only: restart from it with the kodo that wrote it, or start the run "
                   "afresh (format 2 keeps a file per rank and XXH3 checksums; format 1 kept "
                   "a file per unit)"));
}

}  // namespace

std::string manifest_text(const CheckpointInfo& info, int ranks,
                          const std::map<std::uint32_t, SavedFile>& files,
                          const std::vector<SavedCollectionRecord>& collections,
                          const std::vector<ManifestUnit>& written) {
  std::ostringstream m;
  m << "kodo-checkpoint " << kFormat << "\nkodo-version " << kodo::version() << ' '
    << kodo::commit() << "\napplication " << info.application << "\nranks " << ranks << '\n';
  for (const auto& [key, value] : info.keys) m << "key " << key << ' ' << value << '\n';
  for (const auto& [rank, f] : files)
    m << "file " << rank << ' ' << f.bytes << ' ' << xxh3_text(f.checksum) << '\n';
  // Every entry came from another rank: each is checked before it is used.
  std::map<std::uint32_t, std::vector<const ManifestUnit*>> by_collection;
  for (const auto& c : collections)
    by_collection[c.id].assign(static_cast<std::size_t>(c.shape.size()), nullptr);
  for (const auto& u : written) {
    const auto units = by_collection.find(u.collection);
    const auto file = files.find(u.rank);
    std::string wrong;
    if (units == by_collection.end())
      wrong = cat("names collection ", u.collection, ", which the checkpoint does not hold");
    else if (u.linear < 0 || static_cast<std::uint64_t>(u.linear) >= units->second.size())
      wrong = cat("names unit ", u.linear, " of collection ", u.collection, ", which has ",
                  units->second.size(), " units");
    else if (units->second[static_cast<std::size_t>(u.linear)])
      wrong = cat("names unit ", u.linear, " of collection ", u.collection, " a second time");
    else if (file == files.end())
      wrong = cat("places the unit in the file of rank ", u.rank, ", which wrote none");
    else if (u.offset > file->second.bytes || u.bytes > file->second.bytes - u.offset)
      wrong = cat("places the unit at bytes ", u.offset, " to ", u.offset, " + ", u.bytes,
                  " of a file of ", file->second.bytes);
    if (!wrong.empty()) throw Error(cat("a checkpoint entry from rank ", u.rank, ' ', wrong));
    units->second[static_cast<std::size_t>(u.linear)] = &u;
  }
  for (const auto& c : collections) {
    const std::int64_t units = c.shape.size();
    m << "collection " << c.id << ' ' << c.shape.x << ' ' << c.shape.y << ' ' << c.shape.z
      << " odf " << (units + ranks - 1) / ranks << " type " << c.unit_type << '\n';
    const std::vector<const ManifestUnit*>& by_linear = by_collection[c.id];
    for (std::int64_t l = 0; l < units; ++l) {
      const ManifestUnit* u = by_linear[static_cast<std::size_t>(l)];
      if (!u) throw Error(cat("unit ", l, " of collection ", c.id, " was not written"));
      m << "unit " << c.id << ' ' << l << ' ' << u->rank << ' ' << u->offset << ' ' << u->bytes
        << ' ' << xxh3_text(u->checksum) << '\n';
    }
  }
  m << "end\n";
  return m.str();
}

namespace {

// One line of a manifest being read: its words, taken in turn, each checked; an error
// names the manifest and the line.
struct ManifestLine {
  const std::string& manifest;
  std::size_t number;
  std::istringstream words;
  std::string word;  // the first

  ManifestLine(const std::string& manifest_in, std::size_t number_in, const std::string& text)
      : manifest(manifest_in), number(number_in), words(text) {
    words >> word;
  }
  Error bad(const std::string& what) const {
    return Error(cat("checkpoint file ", manifest, ", line ", number, ": ", what));
  }
  std::string rest() {
    std::string r;
    std::getline(words >> std::ws, r);
    return r;
  }
  std::string next() {
    std::string w;
    words >> w;
    return w;
  }
  std::int64_t integer(std::int64_t min, std::int64_t max) {
    const std::string w = next();
    const auto v = parse_whole<std::int64_t>(w);
    if (!v || *v < min || *v > max)
      throw bad(cat(quoted_excerpt(w), " is not a number from ", min, " to ", max));
    return *v;
  }
  std::uint64_t checksum() {
    const std::string sum = next();
    const auto value = parse_xxh3(sum);
    if (!value) throw bad(cat(quoted_excerpt(sum), " is not an XXH3 checksum (XXH3_<16 hex>)"));
    return *value;
  }
  void no_more() {
    std::string extra;
    if (words >> extra) throw bad(cat("unexpected ", quoted_excerpt(extra)));
  }
  void once(bool& seen) const {
    if (seen) throw bad(cat("a second ", quoted_excerpt(word), " line"));
    seen = true;
  }
};

// Where each unit lies in its rank's file, to check that the units cover it exactly.
struct Span {
  std::uint64_t offset, bytes;
  std::uint32_t collection;
  std::int64_t linear;
};

void read_file_line(ManifestLine& line, Manifest& m) {
  const auto rank = static_cast<std::uint32_t>(line.integer(0, m.ranks - 1));
  if (m.files.contains(rank)) throw line.bad(cat("the file of rank ", rank, " appears twice"));
  SavedFile& f = m.files[rank];
  f.bytes = static_cast<std::uint64_t>(line.integer(0, std::int64_t{1} << 62));
  f.checksum = line.checksum();
  line.no_more();
}

void read_collection_line(ManifestLine& line, Manifest& m) {
  SavedCollectionRecord r;
  r.id = static_cast<std::uint32_t>(line.integer(0, UINT32_MAX));
  r.shape.x = line.integer(1, INT64_MAX);
  r.shape.y = line.integer(1, INT64_MAX);
  r.shape.z = line.integer(1, INT64_MAX);
  const auto xy =
      checked_mul(static_cast<std::uint64_t>(r.shape.x), static_cast<std::uint64_t>(r.shape.y));
  const auto xyz = xy ? checked_mul(*xy, static_cast<std::uint64_t>(r.shape.z)) : xy;
  if (!xyz || *xyz > std::uint64_t{1} << 62) throw line.bad("a collection of more than 2^62 units");
  const std::string odf = line.next();
  line.integer(1, INT64_MAX);
  const std::string type = line.next();
  r.unit_type = line.next();
  if (odf != "odf" || type != "type" || r.unit_type.empty())
    throw line.bad("a malformed collection line");
  line.no_more();
  for (const auto& other : m.collections)
    if (other.id == r.id) throw line.bad(cat("collection ", r.id, " appears twice"));
  m.collections.push_back(std::move(r));
}

void read_unit_line(ManifestLine& line, Manifest& m, bool have_ranks,
                    std::map<std::uint32_t, std::vector<Span>>& spans) {
  const auto id = static_cast<std::uint32_t>(line.integer(0, UINT32_MAX));
  auto found = std::find_if(m.collections.begin(), m.collections.end(),
                            [&](const auto& r) { return r.id == id; });
  if (found == m.collections.end())
    throw line.bad(cat("a unit of collection ", id, ", which is not listed before it"));
  const std::int64_t linear = line.integer(0, found->shape.size() - 1);
  if (!have_ranks) throw line.bad("a unit before the 'ranks' line");
  SavedUnit u;
  u.file = static_cast<std::uint32_t>(line.integer(0, m.ranks - 1));
  const auto listed = m.files.find(u.file);
  if (listed == m.files.end())
    throw line.bad(cat("unit ", linear, " of collection ", id, " lies in ", rank_file_name(u.file),
                       ", which is not listed before it"));
  const SavedFile& file = listed->second;
  u.offset = static_cast<std::uint64_t>(line.integer(0, INT64_MAX));
  u.bytes = static_cast<std::uint64_t>(line.integer(0, INT64_MAX));
  if (u.offset > file.bytes || u.bytes > file.bytes - u.offset)
    throw line.bad(cat("unit ", linear, " of collection ", id, " (bytes ", u.offset, " to ",
                       u.offset + u.bytes, ") extends past the end of ", rank_file_name(u.file),
                       " (", file.bytes, " bytes)"));
  u.checksum = line.checksum();
  line.no_more();
  spans[u.file].push_back({u.offset, u.bytes, id, linear});
  // Units come in order, so the list grows by one each time.
  if (static_cast<std::int64_t>(found->units.size()) != linear)
    throw line.bad(cat("unit ", linear, " of collection ", id, " out of order"));
  found->units.push_back(u);
}

// The manifest read whole: every collection's units listed, and the units of each file
// covering it exactly (none overlaps another, none is left out).
void check_whole(const std::string& manifest, const Manifest& m,
                 std::map<std::uint32_t, std::vector<Span>>& spans) {
  for (const auto& r : m.collections)
    if (static_cast<std::int64_t>(r.units.size()) != r.shape.size())
      throw Error(cat("checkpoint file ", manifest, " lists ", r.units.size(), " of the ",
                      r.shape.size(), " units of collection ", r.id));
  for (const auto& [rank, file] : m.files) {
    auto& in = spans[rank];
    std::sort(in.begin(), in.end(), [](const Span& a, const Span& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.bytes < b.bytes;
    });
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i].offset < at)
        throw Error(cat("checkpoint file ", manifest, ": unit ", in[i].linear, " of collection ",
                        in[i].collection, " overlaps unit ", in[i - 1].linear, " of collection ",
                        in[i - 1].collection, " in ", rank_file_name(rank)));
      if (in[i].offset > at) break;
      at = in[i].offset + in[i].bytes;
    }
    if (at != file.bytes)
      throw Error(cat("checkpoint file ", manifest, ": the units listed in ", rank_file_name(rank),
                      " do not cover its ", file.bytes, " bytes (a gap from byte ", at, ")"));
  }
}

}  // namespace

Manifest parse_manifest(const std::string& text_in, const std::string& checkpoint,
                        std::string_view application) {
  const std::string manifest = checkpoint + "/manifest";
  Manifest result;
  std::istringstream in(text_in);
  std::map<std::uint32_t, std::vector<Span>> spans;
  std::string text;
  std::size_t number = 0;
  bool ended = false, have_application = false, have_version = false, have_ranks = false;
  while (std::getline(in, text)) {
    ManifestLine line(manifest, ++number, text);
    const std::string& word = line.word;
    if (ended) throw line.bad("text after 'end'");
    if (number == 1) {
      if (word != "kodo-checkpoint") throw line.bad("not a kodo checkpoint manifest");
      const std::string format = line.rest();
      if (format != std::to_string(kFormat)) throw other_format(checkpoint, format, "");
    } else if (word == "kodo-version") {
      line.once(have_version);
      result.kodo_version = line.rest();
    } else if (word == "application") {
      line.once(have_application);
      const std::string app = line.rest();
      if (app != application)
        throw Error(cat("checkpoint ", checkpoint, " was written by ", quoted_excerpt(app),
                        ", not ", application));
    } else if (word == "ranks") {
      line.once(have_ranks);
      result.ranks = static_cast<int>(line.integer(1, INT32_MAX));
      line.no_more();
    } else if (word == "file") {
      if (!have_ranks) throw line.bad("a file before the 'ranks' line");
      read_file_line(line, result);
    } else if (word == "key") {
      const std::string key = line.next();
      if (key.empty()) throw line.bad("a key without a name");
      for (const auto& [k, v] : result.keys)
        if (k == key) throw line.bad(cat("key ", quoted_excerpt(key), " appears twice"));
      result.keys.emplace_back(key, line.rest());
    } else if (word == "collection") {
      read_collection_line(line, result);
    } else if (word == "unit") {
      read_unit_line(line, result, have_ranks, spans);
    } else if (word == "end") {
      line.no_more();
      ended = true;
    } else {
      throw line.bad(cat("unknown entry ", quoted_excerpt(word)));
    }
  }
  if (!ended) throw Error(cat("checkpoint file ", manifest, " is truncated (no 'end')"));
  if (!have_application || result.ranks == 0 || result.collections.empty())
    throw Error(cat("checkpoint file ", manifest, " lacks its application, ranks or collections"));
  check_whole(manifest, result, spans);
  return result;
}

LatestManifest read_latest(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(cat("checkpoint directory ", dir, " does not exist"));
  const std::string latest = dir + "/latest";
  if (!fs::exists(fs::symlink_status(latest, ec)))
    throw Error(cat("checkpoint directory ", dir, " holds no complete checkpoint (no ", latest,
                    ")"));
  const auto latest_bytes = read_small_file(latest, 256, "checkpoint file");
  std::istringstream line(std::string(reinterpret_cast<const char*>(latest_bytes.data()),
                                      latest_bytes.size()));
  LatestManifest m;
  std::string sum, extra;
  bool partial = false;
  const bool named = line >> m.name >> sum && !(line >> extra);
  const auto manifest_sum = parse_xxh3(sum);
  // Format 1 wrote its own checksum as bare hexadecimal digits.
  const bool format_1 = !manifest_sum && parse_whole<std::uint64_t>(sum, 16);
  if (!named || !(manifest_sum || format_1) || checkpoint_number(m.name, &partial) < 0 || partial)
    throw Error(cat(latest, " is not a checkpoint's name"));
  require_real_directory(cat(dir, "/", m.name), "checkpoint");
  const std::string manifest = cat(dir, "/", m.name, "/manifest");
  const auto bytes = read_small_file(manifest, kManifestLimit, "checkpoint file");
  if (format_1) {
    // Refused before its checksum (of another kind) is compared: named by its first line
    // and the kodo that wrote it, where the manifest says so.
    std::istringstream lines(std::string(reinterpret_cast<const char*>(bytes.data()),
                                         bytes.size()));
    std::string first, word, format = "1", written_by;
    if (std::getline(lines, first)) {
      std::istringstream words(first);
      if (words >> word >> extra && word == "kodo-checkpoint") format = extra;
    }
    for (std::string l; std::getline(lines, l);)
      if (l.starts_with("kodo-version ")) {
        written_by = trimmed(l.substr(13));
        break;
      }
    throw other_format(cat(dir, "/", m.name), format, written_by);
  }
  if (checkpoint_checksum(bytes.data(), bytes.size()) != *manifest_sum)
    throw Error(cat("checkpoint file ", manifest, " does not match its checksum in ", latest,
                    ": the file is corrupted"));
  m.text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return m;
}

}  // namespace kodo::detail
