// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Shared memory among the ranks of one node (comm/detail/node_segment.hpp), on 1, 2 and 4
// ranks under ctest: every rank reads and writes every segment of its node, and a
// segment whose size or header is not what its owner announced is refused by name.

#include <kodo/comm/detail/node_segment.hpp>

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {

using kodo::detail::NodeSegments;
using kodo::detail::SegmentHeader;

std::uint64_t* words(const NodeSegments& s, int rank) {
  return reinterpret_cast<std::uint64_t*>(s.of(rank));
}

TEST(NodeSegments, EveryRankReadsAndWritesEverySegmentOfItsNode) {
  const MPI_Comm world = test_runtime().comm();
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  const NodeSegments segments(world, 1000);
  EXPECT_EQ(segments.bytes(), 1024u);  // rounded up to 64
  ASSERT_TRUE(segments.on_node(rank));
  EXPECT_EQ(segments.node_ranks().size(), static_cast<std::size_t>(size));  // ctest: one node
  EXPECT_FALSE(segments.on_node(size));
  EXPECT_THROW(segments.of(size), kodo::Error);

  // Word 0 of each segment is its owner's; word 1 + r is written by rank r.
  std::uint64_t* mine = words(segments, rank);
  for (std::size_t w = 0; w < segments.bytes() / 8; ++w) EXPECT_EQ(mine[w], 0u) << w;
  MPI_Barrier(world);  // every rank has seen its segment zeroed before anyone writes
  mine[0] = 1000u * static_cast<unsigned>(rank) + 1;
  for (const int r : segments.node_ranks())
    words(segments, r)[1 + rank] = 7u + static_cast<unsigned>(rank);
  MPI_Barrier(world);
  for (const int r : segments.node_ranks()) {
    EXPECT_EQ(words(segments, r)[0], 1000u * static_cast<unsigned>(r) + 1) << "rank " << r;
    EXPECT_EQ(mine[1 + r], 7u + static_cast<unsigned>(r)) << "written by rank " << r;
  }
  MPI_Barrier(world);  // nobody unmaps a segment another rank still reads
}

// A segment made by hand: a memory file `file_bytes` long (sealed unless `seal` is
// false), with the header of a segment of rank 3 (process 4242, 128 usable bytes) as
// changed by `spoil`. Returns its descriptor; peers open it by segment_path.
constexpr std::size_t kForged = 128;
SegmentHeader good_header() {
  SegmentHeader header{};
  std::memcpy(header.magic, "kodoseg", 8);
  header.version = kodo::detail::kSegmentVersion;
  header.owner = 3;
  header.bytes = kForged;
  header.pid = 4242;
  return header;
}
template <class Spoil>
int forge(std::size_t file_bytes, Spoil spoil, bool seal = true) {
  const int fd = memfd_create("kodo.test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(file_bytes)), 0);
  SegmentHeader header = good_header();
  spoil(header);
  EXPECT_EQ(pwrite(fd, &header, sizeof header, 0), static_cast<ssize_t>(sizeof header));
  if (seal) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  }
  return fd;
}

TEST(NodeSegments, RefusesASegmentThatIsNotWhatItsOwnerAnnounced) {
  const std::size_t whole = kodo::detail::kSegmentHeaderBytes + kForged;
  auto refused = [&](std::size_t file_bytes, auto spoil, const std::string& expected,
                     bool seal = true) {
    const int fd = forge(file_bytes, spoil, seal);
    const std::string path = kodo::detail::segment_path(getpid(), fd);
    try {
      kodo::detail::map_segment(path, 3, 4242, kForged);
      ADD_FAILURE() << "accepted a segment that should read: " << expected;
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
    close(fd);
  };
  refused(whole, [](SegmentHeader& h) { h.magic[0] = 'x'; }, "magic");
  refused(whole, [](SegmentHeader& h) { h.version = 99; }, "format version 99");
  refused(whole, [](SegmentHeader& h) { h.owner = 5; }, "names rank 5 as its owner");
  refused(whole, [](SegmentHeader& h) { h.bytes = 1u << 30; }, "says it holds 1073741824");
  refused(whole, [](SegmentHeader& h) { h.pid = 1; }, "names process 1");
  refused(whole - 8, [](SegmentHeader&) {}, "has 184 bytes where 192 were expected");
  // A memory file anyone holding it could shrink under the reader is refused.
  refused(whole, [](SegmentHeader&) {}, "is not sealed against resizing", false);
  {
    // A segment whose owner has closed its descriptor can no longer be opened.
    const int fd = forge(whole, [](SegmentHeader&) {});
    const std::string path = kodo::detail::segment_path(getpid(), fd);
    close(fd);
    EXPECT_THROW(kodo::detail::map_segment(path, 3, 4242, kForged), kodo::Error);
  }
  {
    // A path that is no memory file at all (a directory) is refused (opening it fails).
    try {
      kodo::detail::map_segment("/proc", 3, 4242, kForged);
      ADD_FAILURE() << "accepted a directory as a segment";
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find("/proc"), std::string::npos) << e.what();
    }
  }

  // The unspoilt segment is accepted.
  const int fd = forge(whole, [](SegmentHeader&) {});
  void* base =
      kodo::detail::map_segment(kodo::detail::segment_path(getpid(), fd), 3, 4242, kForged);
  EXPECT_NE(base, nullptr);
  munmap(base, whole);
  close(fd);
}

// Random headers (issue 31, item 8): each is refused naming the first field that differs
// from what its owner announced, in the order the checks take them, or accepted when none
// does; nothing else.
TEST(NodeSegments, RandomHeadersGetExactlyTheirRefusal) {
  const std::size_t whole = kodo::detail::kSegmentHeaderBytes + kForged;
  std::mt19937_64 rng(20261127);
  int accepted = 0, refused = 0;
  for (int i = 0; i < 2000; ++i) {
    SegmentHeader h = good_header();
    // Up to three fields spoilt, each with a random value or one near the right one.
    for (int k = static_cast<int>(rng() % 4); k > 0; --k) {
      const std::uint64_t v = rng() % 2 ? rng() : rng() % 3;
      switch (rng() % 5) {
        case 0: h.magic[rng() % 8] = static_cast<char>(v); break;
        case 1: h.version = static_cast<std::uint32_t>(v); break;
        case 2: h.owner = static_cast<std::uint32_t>(v + 2); break;
        case 3: h.bytes = v + kForged - 1; break;
        default: h.pid = static_cast<std::int64_t>(v) + 4241; break;
      }
    }
    std::string expected;
    if (std::memcmp(h.magic, "kodoseg", 8) != 0)
      expected = "is not a kodo segment (its magic differs)";
    else if (h.version != kodo::detail::kSegmentVersion)
      expected = "has format version " + std::to_string(h.version);
    else if (h.owner != 3)
      expected = "names rank " + std::to_string(h.owner) + " as its owner";
    else if (h.bytes != kForged)
      expected = "says it holds " + std::to_string(h.bytes) + " bytes";
    else if (h.pid != 4242)
      expected = "names process " + std::to_string(h.pid);
    const int fd = forge(whole, [&](SegmentHeader& into) { into = h; });
    const std::string path = kodo::detail::segment_path(getpid(), fd);
    try {
      void* base = kodo::detail::map_segment(path, 3, 4242, kForged);
      munmap(base, whole);
      ++accepted;
      EXPECT_EQ(expected, "") << "accepted a header that " << expected;
    } catch (const kodo::Error& e) {
      ++refused;
      // Exactly the first spoilt field's refusal (what follows it: the expected value).
      const std::string prefix = "kodo: shared-memory segment " + path + " of rank 3 ";
      EXPECT_FALSE(expected.empty()) << "refused a good header: " << e.what();
      EXPECT_TRUE(std::string_view(e.what()).starts_with(prefix + expected)) << e.what();
    }
    close(fd);
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
}

// The case a review found (issue 31): a process that opened a rank's segment shrank it and
// the rank's next read of its ring words raised SIGBUS. A segment kodo makes cannot be
// resized by any holder, and its words stay readable.
TEST(NodeSegments, NoHolderCanResizeASegment) {
  const kodo::detail::OwnSegment own = kodo::detail::create_segment(3, kForged);
  ASSERT_GE(own.fd, 0);
  const std::string path = kodo::detail::segment_path(getpid(), own.fd);
  const int other = open(path.c_str(), O_RDWR | O_CLOEXEC);  // as another process would
  ASSERT_GE(other, 0) << std::strerror(errno);
  EXPECT_NE(ftruncate(other, 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(other, 1 << 20), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(fcntl(other, F_ADD_SEALS, F_SEAL_WRITE), 0);  // nor change its seals
  void* base = kodo::detail::map_segment(path, 3, getpid(), kForged);
  auto* words = static_cast<std::uint64_t*>(base) + kodo::detail::kSegmentHeaderBytes / 8;
  words[kForged / 8 - 1] = 42;  // the last word is still there
  EXPECT_EQ(static_cast<std::uint64_t*>(
                own.base)[kodo::detail::kSegmentHeaderBytes / 8 + kForged / 8 - 1],
            42u);
  close(other);
  munmap(base, kodo::detail::kSegmentHeaderBytes + kForged);
  munmap(own.base, kodo::detail::kSegmentHeaderBytes + kForged);
  close(own.fd);
}

// Once every rank of the node has mapped the segments, none can be opened again: the
// owner's descriptor is closed and no name exists in /dev/shm.
TEST(NodeSegments, ASegmentCannotBeOpenedOnceMapped) {
  const MPI_Comm world = test_runtime().comm();
  int before = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    before += entry.path().filename() != "." ? 1 : 0;
  {
    const NodeSegments segments(world, 4096);
    int during = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
      during += entry.path().filename() != "." ? 1 : 0;
    EXPECT_LE(during, before) << "a descriptor of a segment is still open";
    if (std::filesystem::exists("/dev/shm")) {
      for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
        EXPECT_FALSE(entry.path().filename().string().starts_with("kodo."))
            << entry.path() << " names a segment";
      }
    }
    MPI_Barrier(world);
  }
}

}  // namespace
