// Shared memory among the ranks of one node (comm/detail/node_segment.hpp), on 1, 2 and 4
// ranks under ctest: every rank reads and writes every segment of its node, and a
// segment whose size or header is not what its owner announced is refused by name.

#include <kodo/comm/detail/node_segment.hpp>

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fcntl.h>
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

// A segment made by hand: `file_bytes` long, with the header of a segment of rank 3
// (process 4242, 128 usable bytes) as changed by `spoil`.
constexpr std::size_t kForged = 128;
template <class Spoil>
std::string forge(const std::string& tag, std::size_t file_bytes, Spoil spoil) {
  const std::string name = "/kodo.test." + tag + "." + std::to_string(getpid());
  shm_unlink(name.c_str());
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(file_bytes)), 0);
  SegmentHeader header{};
  std::memcpy(header.magic, "kodoseg", 8);
  header.version = kodo::detail::kSegmentVersion;
  header.owner = 3;
  header.bytes = kForged;
  header.pid = 4242;
  spoil(header);
  EXPECT_EQ(pwrite(fd, &header, sizeof header, 0), static_cast<ssize_t>(sizeof header));
  close(fd);
  return name;
}

TEST(NodeSegments, RefusesASegmentThatIsNotWhatItsOwnerAnnounced) {
  const std::size_t whole = kodo::detail::kSegmentHeaderBytes + kForged;
  auto refused = [&](const std::string& tag, std::size_t file_bytes, auto spoil,
                     const std::string& expected) {
    const std::string name = forge(tag, file_bytes, spoil);
    try {
      kodo::detail::map_segment(name, 3, 4242, kForged);
      ADD_FAILURE() << "accepted a segment that should read: " << expected;
    } catch (const kodo::Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    shm_unlink(name.c_str());
  };
  refused("magic", whole, [](SegmentHeader& h) { h.magic[0] = 'x'; }, "magic");
  refused("version", whole, [](SegmentHeader& h) { h.version = 99; }, "format version 99");
  refused("owner", whole, [](SegmentHeader& h) { h.owner = 5; }, "names rank 5 as its owner");
  refused("bytes", whole, [](SegmentHeader& h) { h.bytes = 1u << 30; }, "says it holds 1073741824");
  refused("pid", whole, [](SegmentHeader& h) { h.pid = 1; }, "names process 1");
  refused("size", whole - 8, [](SegmentHeader&) {}, "has 184 bytes where 192 were expected");

  // The unspoilt segment is accepted.
  const std::string name = forge("good", whole, [](SegmentHeader&) {});
  void* base = kodo::detail::map_segment(name, 3, 4242, kForged);
  EXPECT_NE(base, nullptr);
  munmap(base, whole);
  shm_unlink(name.c_str());
}

}  // namespace
