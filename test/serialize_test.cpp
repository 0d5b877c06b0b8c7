// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "expect_error.hpp"

#include <kodo/kodo.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

struct Point {
  int a;
  double b;
};

TEST(Serialize, ValuesStringsAndVectorsRoundTrip) {
  kodo::ByteWriter w;
  kodo::pack(w, 42);
  kodo::pack(w, Point{7, 2.5});
  kodo::pack(w, std::string("halo"));
  kodo::pack(w, std::vector<long>{1, -2, 3});
  kodo::pack(w, std::vector<std::string>{"a", "bc"});
  const kodo::Bytes bytes = kodo::detail::WireAccess::take_bytes(w);
  kodo::ByteReader r(bytes);
  EXPECT_EQ(kodo::unpack<int>(r), 42);
  const auto p = kodo::unpack<Point>(r);
  EXPECT_EQ(p.a, 7);
  EXPECT_EQ(p.b, 2.5);
  EXPECT_EQ(kodo::unpack<std::string>(r), "halo");
  EXPECT_EQ(kodo::unpack<std::vector<long>>(r), (std::vector<long>{1, -2, 3}));
  EXPECT_EQ(kodo::unpack<std::vector<std::string>>(r), (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.remaining(), 0u);
}

// A view travels as its extents plus an attachment: the view's own memory (no copy);
// unpacking allocates a new view and names its memory as the destination of the data.
TEST(Serialize, ViewsTravelAsAttachments) {
  Kokkos::View<double**> v("v", 3, 4);
  auto h = Kokkos::create_mirror_view(v);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) h(i, j) = 10 * i + j;
  Kokkos::deep_copy(v, h);

  kodo::ByteWriter w;
  kodo::pack(w, 5);
  kodo::pack(w, v);
  const kodo::Bytes bytes = kodo::detail::WireAccess::take_bytes(w);
  const auto attachments = kodo::detail::WireAccess::take_attachments(w);
  ASSERT_EQ(attachments.size(), 1u);
  EXPECT_EQ(attachments[0].segment.data, v.data());
  EXPECT_EQ(attachments[0].segment.bytes, 12 * sizeof(double));
  EXPECT_EQ(attachments[0].segment.kind,
            kodo::detail::memory_kind<Kokkos::View<double**>::memory_space>());
  EXPECT_EQ(bytes.size(), sizeof(int) + 2 * sizeof(std::uint64_t));  // no contents inline

  std::vector<kodo::detail::Segment> destinations;
  kodo::ByteReader r(bytes);
  kodo::detail::WireAccess::expect_views(r, destinations, 12 * sizeof(double));
  EXPECT_EQ(kodo::unpack<int>(r), 5);
  auto out = kodo::unpack<Kokkos::View<double**>>(r);
  ASSERT_EQ(out.extent(0), 3u);
  ASSERT_EQ(out.extent(1), 4u);
  EXPECT_NE(out.data(), v.data());
  ASSERT_EQ(destinations.size(), 1u);
  EXPECT_EQ(destinations[0].data, out.data());
  EXPECT_EQ(destinations[0].bytes, 12 * sizeof(double));
  // What a transport does: the data lands in the destination.
  Kokkos::deep_copy(out, v);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(ho(i, j), 10 * i + j);
}

TEST(Serialize, ViewWithoutDestinationsIsAnError) {
  kodo::ByteWriter w;
  kodo::pack(w, Kokkos::View<double*>("v", 8));
  const kodo::Bytes bytes = kodo::detail::WireAccess::take_bytes(w);
  kodo::ByteReader r(bytes);
  EXPECT_THROW(kodo::unpack<Kokkos::View<double*>>(r), kodo::Error);
}

TEST(Serialize, EmptyViewRoundTrips) {
  Kokkos::View<int*> v("empty", 0);
  kodo::ByteWriter w;
  kodo::pack(w, v);
  const kodo::Bytes bytes = kodo::detail::WireAccess::take_bytes(w);
  EXPECT_TRUE(kodo::detail::WireAccess::take_attachments(w).empty());
  kodo::ByteReader r(bytes);
  EXPECT_EQ(kodo::unpack<Kokkos::View<int*>>(r).extent(0), 0u);
}

TEST(Serialize, TruncatedPayloadIsAnError) {
  kodo::ByteWriter w;
  kodo::pack(w, std::vector<double>{1, 2, 3});
  kodo::Bytes bytes = kodo::detail::WireAccess::take_bytes(w);
  bytes.resize(bytes.size() - 1);
  kodo::ByteReader r(bytes);
  EXPECT_THROW(kodo::unpack<std::vector<double>>(r), kodo::Error);

  kodo::ByteWriter w2;
  kodo::pack(w2, Kokkos::View<double**>("v", 8, 2));
  kodo::Bytes b2 = kodo::detail::WireAccess::take_bytes(w2);
  b2.resize(b2.size() - 4);  // the second extent is cut
  std::vector<kodo::detail::Segment> destinations;
  kodo::ByteReader r2(b2);
  kodo::detail::WireAccess::expect_views(r2, destinations, 16 * sizeof(double));
  EXPECT_THROW(kodo::unpack<Kokkos::View<double**>>(r2), kodo::Error);
}

using Access = kodo::detail::WireAccess;

// The message of `f`'s kodo::Error, or "" when it throws none.

kodo::Bytes bytes_of(std::initializer_list<std::uint64_t> words) {
  kodo::ByteWriter w;
  for (auto x : words) kodo::pack(w, x);
  return Access::take_bytes(w);
}

// Counts and extents from the wire are checked before anything is allocated.
TEST(Serialize, HugeCountsAreRefusedBeforeAllocating) {
  const kodo::Bytes huge = bytes_of({std::uint64_t{1} << 60, 7});
  kodo::ByteReader r1(huge);
  EXPECT_NE(error_of([&] { kodo::unpack<std::vector<double>>(r1); }).find("claims"),
            std::string::npos);
  kodo::ByteReader r2(huge);
  EXPECT_NE(error_of([&] { kodo::unpack<std::vector<std::string>>(r2); }).find("claims"),
            std::string::npos);
  kodo::ByteReader r3(huge);
  EXPECT_NE(error_of([&] { kodo::unpack<std::string>(r3); }).find("claims"), std::string::npos);
}

TEST(Serialize, ViewExtentsThatOverflowOrExceedTheBoundAreRefused) {
  std::vector<kodo::detail::Segment> destinations;
  // 2^40 x 2^40 doubles overflows 64 bits; 2^36 doubles exceeds the bound.
  for (const auto& words : {bytes_of({std::uint64_t{1} << 40, std::uint64_t{1} << 40}),
                            bytes_of({std::uint64_t{1} << 36, 1})}) {
    kodo::ByteReader r(words);
    Access::expect_views(r, destinations, kodo::detail::kMaxViewDataBytes);
    EXPECT_NE(error_of([&] { kodo::unpack<Kokkos::View<double**>>(r); }).find("bound"),
              std::string::npos);
  }
  EXPECT_TRUE(destinations.empty());
}

TEST(Serialize, ViewsMustFitTheDataThatArrived) {
  std::vector<kodo::detail::Segment> destinations;
  const kodo::Bytes words = bytes_of({100});
  kodo::ByteReader r(words);
  Access::expect_views(r, destinations, 99 * sizeof(double));  // one element short
  EXPECT_NE(error_of([&] { kodo::unpack<Kokkos::View<double*>>(r); }).find("exceeds"),
            std::string::npos);
  EXPECT_TRUE(destinations.empty());
}

TEST(Serialize, BoolsAreZeroOrOneAndEnumsKeepTheirBits) {
  enum class Colour : std::uint8_t { red = 1, blue = 2 };
  kodo::ByteWriter w;
  kodo::pack(w, true);
  kodo::pack(w, Colour::blue);
  kodo::pack<std::uint8_t>(w, 2);  // read back as a bool: invalid
  const kodo::Bytes b = Access::take_bytes(w);
  ASSERT_EQ(b.size(), 3u);
  kodo::ByteReader r(b);
  EXPECT_TRUE(kodo::unpack<bool>(r));
  EXPECT_EQ(kodo::unpack<Colour>(r), Colour::blue);
  EXPECT_NE(error_of([&] { kodo::unpack<bool>(r); }).find("not 0 or 1"), std::string::npos);
}

TEST(Serialize, EmptyInputsAreSafe) {
  kodo::ByteReader empty(nullptr, 0);
  char c = 0;
  empty.read(&c, 0);  // no copy from a null pointer
  EXPECT_EQ(empty.remaining(), 0u);
  EXPECT_NE(error_of([&] { kodo::unpack<int>(empty); }).find("end after 0 bytes"),
            std::string::npos);
}

}  // namespace
