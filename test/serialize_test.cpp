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

TEST(Serialize, ViewsTravelByContent) {
  Kokkos::View<double**> v("v", 3, 4);
  auto h = Kokkos::create_mirror_view(v);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) h(i, j) = 10 * i + j;
  Kokkos::deep_copy(v, h);

  kodo::ByteWriter w;
  kodo::pack(w, v);
  Kokkos::deep_copy(v, -1.0);  // the message holds a snapshot
  const kodo::Bytes bytes = w.take();
  kodo::ByteReader r(bytes);
  auto out = kodo::unpack<Kokkos::View<double**>>(r);
  ASSERT_EQ(out.extent(0), 3u);
  ASSERT_EQ(out.extent(1), 4u);
  EXPECT_NE(out.data(), v.data());
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(ho(i, j), 10 * i + j);
}

TEST(Serialize, EmptyViewRoundTrips) {
  Kokkos::View<int*> v("empty", 0);
  kodo::ByteWriter w;
  kodo::pack(w, v);
  const kodo::Bytes bytes = w.take();
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
  kodo::pack(w2, Kokkos::View<double*>("v", 8));
  kodo::Bytes b2 = w2.take();
  b2.resize(b2.size() - 8);
  kodo::ByteReader r2(b2);
  EXPECT_THROW(kodo::unpack<Kokkos::View<double*>>(r2), std::runtime_error);
}

}  // namespace
