// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A checkpoint's manifest (tasking/checkpoints/detail/checkpoint_manifest.hpp): written and parsed
// back, its checksums xxHash's XXH3-64 as xxhsum prints them, and malformed indexes of the
// rank files refused (by name, and under random changes: never anything but a parse that
// keeps every unit inside its file, or kodo::Error).
#include <kodo/tasking/checkpoints/detail/checkpoint_manifest.hpp>

#include <kodo/tasking/checkpoints/detail/checkpoint_files.hpp>

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace kodo::detail {
namespace {

// Two collections over three rank files (rank 1 wrote none), as finish() would list them.
std::string valid_manifest() {
  const CheckpointInfo info{"app", {{"step", "7"}}};
  std::vector<SavedCollectionRecord> collections{{0, Extent3{3, 1, 1}, "A", {}},
                                                 {4, Extent3{1, 2, 1}, "B", {}}};
  std::vector<ManifestUnit> units{
      {0, 0, 0, 0, 100, 0x11}, {0, 0, 1, 100, 50, 0x22}, {4, 0, 0, 150, 10, 0x33},
      {0, 2, 2, 0, 30, 0x44},  {4, 3, 1, 0, 70, 0x55},
  };
  const std::map<std::uint32_t, SavedFile> files{
      {0, {160, 0xaa}}, {2, {30, 0xbb}}, {3, {70, 0xcc}}};
  return manifest_text(info, 4, files, collections, units);
}

std::string replaced(const std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  std::string out = text;
  return out.replace(at, from.size(), to);
}

// Rank 0 builds the manifest from entries every rank sent it (issue 54): an entry that
// names a unit outside its collection (it once wrote outside the table), a collection
// not saved, a unit twice, a rank without a file or bytes outside its file is refused,
// naming the rank.
TEST(CheckpointManifest, EntriesFromRanksAreCheckedBeforeUse) {
  const CheckpointInfo info{"app", {}};
  const std::vector<SavedCollectionRecord> collections{{0, Extent3{3, 1, 1}, "A", {}}};
  const std::map<std::uint32_t, SavedFile> files{{0, {100, 0xaa}}, {2, {60, 0xbb}}};
  const std::vector<ManifestUnit> good{
      {0, 0, 0, 0, 40, 1}, {0, 0, 1, 40, 60, 2}, {0, 2, 2, 0, 60, 3}};
  EXPECT_NO_THROW(manifest_text(info, 3, files, collections, good));
  auto refused = [&](ManifestUnit bad, const std::string& says) {
    std::vector<ManifestUnit> units = good;
    units.back() = bad;
    try {
      manifest_text(info, 3, files, collections, units);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("from rank " + std::to_string(bad.rank)),
                std::string::npos)
          << e.what();
    }
  };
  refused({0, 2, 1000000, 0, 60, 3}, "names unit 1000000 of collection 0, which has 3 units");
  refused({0, 2, -5, 0, 60, 3}, "names unit -5 of collection 0");
  refused({7, 2, 2, 0, 60, 3}, "names collection 7, which the checkpoint does not hold");
  refused({0, 2, 1, 0, 60, 3}, "names unit 1 of collection 0 a second time");
  refused({0, 1, 2, 0, 60, 3}, "the file of rank 1, which wrote none");
  refused({0, 2, 2, 10, 60, 3}, "at bytes 10 to 10 + 60 of a file of 60");
  refused({0, 2, 2, ~std::uint64_t{0}, 2, 3}, "of a file of 60");
}

TEST(CheckpointManifest, ChecksumsAreXxh3AsXxhsumPrintsThem) {
  // XXH3-64 of no bytes, xxHash's published value; kodo's checksum is the library's.
  EXPECT_EQ(XXH3_64bits(nullptr, 0), 0x2D06800538D394C2ULL);
  const std::string bytes = "kodo checkpoint bytes";
  EXPECT_EQ(checkpoint_checksum(bytes.data(), bytes.size()),
            XXH3_64bits(bytes.data(), bytes.size()));
  Xxh3 streamed;
  streamed.update(bytes.data(), 5);
  streamed.update(bytes.data() + 5, bytes.size() - 5);
  EXPECT_EQ(streamed.value(), XXH3_64bits(bytes.data(), bytes.size()));
  EXPECT_EQ(xxh3_text(0x2D06800538D394C2ULL), "XXH3_2d06800538d394c2");
  EXPECT_EQ(xxh3_text(0x1), "XXH3_0000000000000001");
  EXPECT_EQ(parse_xxh3("XXH3_2d06800538d394c2"), 0x2D06800538D394C2ULL);
  for (const char* bad :
       {"2d06800538d394c2", "XXH3_2d06800538d394c", "XXH3_2d06800538d394c2f",
        "XXH3_+d06800538d394c2", "XXH3_2d06800538d394cg", "xxh3_2d06800538d394c2"})
    EXPECT_FALSE(parse_xxh3(bad)) << bad;
}

TEST(CheckpointManifest, RoundTrip) {
  const std::string text = valid_manifest();
  EXPECT_NE(text.find("\nfile 0 160 XXH3_00000000000000aa\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nunit 0 1 0 100 50 XXH3_0000000000000022\n"), std::string::npos) << text;
  const Manifest m = parse_manifest(text, "D/checkpoint-0", "app");
  EXPECT_EQ(m.ranks, 4);
  ASSERT_EQ(m.files.size(), 3u);
  EXPECT_EQ(m.files.at(2).bytes, 30u);
  EXPECT_EQ(m.files.at(3).checksum, 0xccu);
  ASSERT_EQ(m.collections.size(), 2u);
  const SavedUnit& u = m.collections[0].units[1];
  EXPECT_EQ(u.file, 0u);
  EXPECT_EQ(u.offset, 100u);
  EXPECT_EQ(u.bytes, 50u);
  EXPECT_EQ(u.checksum, 0x22u);
  EXPECT_EQ(m.collections[1].units[1].file, 3u);
}

TEST(CheckpointManifest, MalformedIndexesAreRefused) {
  const std::string text = valid_manifest();
  struct Case {
    std::string from, to, says;
  };
  const std::vector<Case> cases{
      {"unit 0 1 0 100 50", "unit 0 1 0 100 61", "extends past the end of rank-0.state"},
      {"unit 0 1 0 100 50", "unit 0 1 0 161 0", "extends past the end of rank-0.state"},
      {"unit 0 1 0 100 50", "unit 0 1 0 100 9223372036854775807", "extends past the end"},
      {"unit 0 1 0 100 50", "unit 0 1 0 99 51", "overlaps unit"},
      {"unit 0 1 0 100 50", "unit 0 1 0 101 49",
       "do not cover its 160 bytes (a gap from byte 100)"},
      {"file 3 70", "file 3 71", "do not cover its 71 bytes"},
      {"file 2 30 XXH3_00000000000000bb\n", "", "lies in rank-2.state, which is not listed"},
      {"unit 0 2 2", "unit 0 2 1", "lies in rank-1.state, which is not listed"},
      {"unit 0 2 2", "unit 0 2 4", "is not a number from 0 to 3"},
      {"XXH3_0000000000000044", "XXH3_44", "is not an XXH3 checksum"},
      {"file 0 160 XXH3_00000000000000aa", "file 0 160 aa", "is not an XXH3 checksum"},
      {"file 0 160", "file 0 4611686018427387905", "is not a number from 0 to 4611686018427387904"},
      {"file 2 30 XXH3_00000000000000bb\n",
       "file 2 30 XXH3_00000000000000bb\nfile 2 30 XXH3_00000000000000bb\n",
       "the file of rank 2 appears twice"},
      {"ranks 4\n", "", "a file before the 'ranks' line"},
      {"kodo-checkpoint 2", "kodo-checkpoint 1", "is in format '1'; this kodo ("},
      {"end\n", "", "is truncated (no 'end')"},
  };
  for (const auto& c : cases) {
    try {
      parse_manifest(replaced(text, c.from, c.to), "D/checkpoint-0", "app");
      ADD_FAILURE() << "accepted: " << c.from << " -> " << c.to;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos)
          << c.from << " -> " << c.to << ": " << e.what();
    }
  }
}

// Text from the file that an error quotes is cut to 64 bytes (with its length) and shows
// control characters and other bytes as \xNN: a hostile manifest cannot make a message
// huge or write to the terminal.
TEST(CheckpointManifest, ErrorsQuoteAShortPrintableExcerpt) {
  const std::string text = valid_manifest();
  const std::string long_word(100000, 'x');
  for (const auto& [from, to, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"end\n", long_word + "\nend\n",
            "unknown entry '" + std::string(64, 'x') + "'... (100000 bytes)"},
           {"end\n", "bad\x1b[2J\x07word\nend\n", "unknown entry 'bad\\x1b[2J\\x07word'"},
           {"XXH3_0000000000000044", "XXH3_\x7f\xff", "'XXH3_\\x7f\\xff' is not an XXH3"}}) {
    try {
      parse_manifest(replaced(text, from, to), "D/checkpoint-0", "app");
      ADD_FAILURE() << "accepted: " << to.substr(0, 40);
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(says), std::string::npos) << what.substr(0, 300);
      EXPECT_LT(what.size(), 400u);
      EXPECT_EQ(what.find('\x1b'), std::string::npos);
    }
  }
  EXPECT_EQ(kodo::detail::quoted_excerpt("tab\there"), "'tab\\x09here'");
  EXPECT_EQ(kodo::detail::quoted_excerpt(""), "''");
}

// Random changes (a byte set, a byte dropped, a line repeated or dropped): each manifest
// is either refused with kodo::Error or parsed into units that lie inside their files.
TEST(CheckpointManifest, RandomChangesAreRefusedOrConsistent) {
  const std::string text = valid_manifest();
  std::mt19937_64 random(20261127);
  const std::string alphabet = "0123456789 abcdefXH_\nunitfilecollection-";
  int refused = 0;
  for (int round = 0; round < 5000; ++round) {
    std::string t = text;
    for (int k = 1 + static_cast<int>(random() % 3); k > 0; --k) {
      const std::size_t at = random() % t.size();
      switch (random() % 4) {
        case 0: t[at] = alphabet[random() % alphabet.size()]; break;
        case 1: t.erase(at, 1); break;
        case 2: {
          const auto start = t.rfind('\n', at) == std::string::npos ? 0 : t.rfind('\n', at) + 1;
          const auto end = t.find('\n', at);
          if (end != std::string::npos) t.insert(start, t.substr(start, end - start + 1));
          break;
        }
        default: {
          const auto start = t.rfind('\n', at) == std::string::npos ? 0 : t.rfind('\n', at) + 1;
          const auto end = t.find('\n', at);
          if (end != std::string::npos) t.erase(start, end - start + 1);
        }
      }
      if (t.empty()) t = "x";
    }
    try {
      const Manifest m = parse_manifest(t, "D/checkpoint-0", "app");
      for (const auto& c : m.collections)
        for (const auto& u : c.units) {
          ASSERT_TRUE(m.files.contains(u.file)) << t;
          ASSERT_LE(u.offset, m.files.at(u.file).bytes) << t;
          ASSERT_LE(u.bytes, m.files.at(u.file).bytes - u.offset) << t;
        }
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace kodo::detail
