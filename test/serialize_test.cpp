#include <kodo.hpp>

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
  const kodo::Bytes bytes = w.take();
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
  const kodo::Bytes bytes = w.take();
  const auto attachments = w.take_attachments();
  ASSERT_EQ(attachments.size(), 1u);
  EXPECT_EQ(attachments[0].segment.data, v.data());
  EXPECT_EQ(attachments[0].segment.bytes, 12 * sizeof(double));
  EXPECT_EQ(attachments[0].segment.kind, kodo::memory_kind<Kokkos::View<double**>::memory_space>());
  EXPECT_EQ(bytes.size(), sizeof(int) + 2 * sizeof(std::uint64_t));  // no contents inline

  std::vector<kodo::Segment> destinations;
  kodo::ByteReader r(bytes, &destinations);
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
  const kodo::Bytes bytes = w.take();
  kodo::ByteReader r(bytes);
  EXPECT_THROW(kodo::unpack<Kokkos::View<double*>>(r), std::runtime_error);
}

TEST(Serialize, EmptyViewRoundTrips) {
  Kokkos::View<int*> v("empty", 0);
  kodo::ByteWriter w;
  kodo::pack(w, v);
  const kodo::Bytes bytes = w.take();
  EXPECT_TRUE(w.take_attachments().empty());
  kodo::ByteReader r(bytes);
  EXPECT_EQ(kodo::unpack<Kokkos::View<int*>>(r).extent(0), 0u);
}

TEST(Serialize, TruncatedPayloadIsAnError) {
  kodo::ByteWriter w;
  kodo::pack(w, std::vector<double>{1, 2, 3});
  kodo::Bytes bytes = w.take();
  bytes.resize(bytes.size() - 1);
  kodo::ByteReader r(bytes);
  EXPECT_THROW(kodo::unpack<std::vector<double>>(r), std::runtime_error);

  kodo::ByteWriter w2;
  kodo::pack(w2, Kokkos::View<double**>("v", 8, 2));
  kodo::Bytes b2 = w2.take();
  b2.resize(b2.size() - 4);  // the second extent is cut
  std::vector<kodo::Segment> destinations;
  kodo::ByteReader r2(b2, &destinations);
  EXPECT_THROW(kodo::unpack<Kokkos::View<double**>>(r2), std::runtime_error);
}

}  // namespace
