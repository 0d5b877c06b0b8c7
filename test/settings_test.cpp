// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// kodo's settings (core/settings.hpp): each kind parsed strictly within its range, the
// listing, misspellings, and the start-up agreement: a setting invalid on one rank, or
// different on two, is the same error on every rank (1, 2 and 4 ranks under ctest).

#include <kodo/core/settings.hpp>

#include "test_runtime.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <span>
#include <string>

namespace {

using namespace kodo::detail;

// Sets `name` to `value` (unsets it for nullptr) for the life of the object.
class Scoped {
 public:
  Scoped(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~Scoped() { set(old_ ? old_->c_str() : nullptr); }

 private:
  void set(const char* value) {
    if (value)
      setenv(name_, value, 1);
    else
      unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const kodo::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Settings, BytesParseOrNameTheVariable) {
  EXPECT_EQ(parse_bytes("KODO_X", "0", 100), 0u);
  EXPECT_EQ(parse_bytes("KODO_X", "8192", 1 << 20), 8192u);
  EXPECT_EQ(parse_bytes("KODO_X", "8K", 1 << 20), 8192u);
  EXPECT_EQ(parse_bytes("KODO_X", "3M", std::uint64_t{1} << 40), 3u << 20);
  EXPECT_EQ(parse_bytes("KODO_X", "2G", std::uint64_t{1} << 40), std::uint64_t{2} << 30);
  for (const char* bad : {"", "-1", "+4", " 4", "4 ", "1.5M", "12Q", "8KB", "k",
                          "99999999999999999999", "17179869184G"})
    EXPECT_NE(error_of([&] {
                parse_bytes("KODO_X", bad, ~std::uint64_t{0} / 2);
              }).find("KODO_X must be a number"),
              std::string::npos)
        << bad;
  EXPECT_NE(error_of([] { parse_bytes("KODO_X", "101", 100); }).find("from 0 to 100"),
            std::string::npos);
}

TEST(Settings, EachKindIsParsedStrictlyWithinItsRange) {
  {
    const Scoped s("KODO_STREAMS", nullptr);
    EXPECT_EQ(count_setting("KODO_STREAMS", 4), 4u);
  }
  {
    const Scoped s("KODO_STREAMS", "");  // empty: unset
    EXPECT_EQ(count_setting("KODO_STREAMS", 4), 4u);
  }
  {
    const Scoped s("KODO_STREAMS", "64");
    EXPECT_EQ(count_setting("KODO_STREAMS", 4), 64u);
  }
  // What atoi took: "4abc" as 4, "1e3" as 1, 99999999999 overflowing; 0 and 100000.
  for (const char* bad : {"0", "65", "100000", "4abc", "1e3", "99999999999", "-1", " 4", "x"}) {
    const Scoped s("KODO_STREAMS", bad);
    EXPECT_EQ(error_of([] { count_setting("KODO_STREAMS", 4); }),
              std::string("kodo: KODO_STREAMS must be integer 1 to 64, not '") + bad + "'");
  }
  {
    const Scoped s("KODO_NODE_SEGMENT_BYTES", "4095");  // below the table's least
    EXPECT_NE(error_of([] {
                bytes_setting("KODO_NODE_SEGMENT_BYTES", 1 << 20);
              }).find("KODO_NODE_SEGMENT_BYTES must be bytes 4096 to"),
              std::string::npos);
  }
  {
    // Above the most: the same whole range (issue 54: "from 0 to" stated the wrong one).
    const Scoped s("KODO_MIGRATION_PIECE_BYTES", "2G");
    EXPECT_EQ(error_of([] { bytes_setting("KODO_MIGRATION_PIECE_BYTES", 1 << 25); }),
              "kodo: KODO_MIGRATION_PIECE_BYTES must be bytes 65536 to 1073741824 (digits, "
              "optionally then K, M or G), not '2G'");
  }
  {
    const Scoped s("KODO_NODE_SEGMENT_BYTES", "2M");
    EXPECT_EQ(bytes_setting("KODO_NODE_SEGMENT_BYTES", 1 << 20), 2u << 20);
  }
  for (const char* bad : {"abc", "0", "-3", "1e10", "5s", "nan", "inf"}) {
    const Scoped s("KODO_STALL_SECONDS", bad);
    EXPECT_NE(error_of([] {
                seconds_setting("KODO_STALL_SECONDS");
              }).find("KODO_STALL_SECONDS must be seconds, above 0"),
              std::string::npos)
        << bad;
  }
  {
    const Scoped s("KODO_STALL_SECONDS", "2.5");
    EXPECT_EQ(seconds_setting("KODO_STALL_SECONDS"), 2.5);
  }
  for (const char* bad : {"yes", "true", "2", "01"}) {
    const Scoped s("KODO_SHARE_GPUS", bad);
    EXPECT_EQ(error_of([] { flag_setting("KODO_SHARE_GPUS"); }),
              std::string("kodo: KODO_SHARE_GPUS must be 0 or 1, not '") + bad + "'");
  }
  {
    const Scoped s("KODO_SHARE_GPUS", "1");
    EXPECT_TRUE(flag_setting("KODO_SHARE_GPUS"));
  }
  {
    const Scoped s("KODO_CHANNELS", nullptr);
    EXPECT_EQ(choice_setting("KODO_CHANNELS"), "auto");  // the first choice
  }
  {
    const Scoped s("KODO_CHANNELS", "nvlink");
    EXPECT_EQ(error_of([] { choice_setting("KODO_CHANNELS"); }),
              "kodo: KODO_CHANNELS must be one of auto, ucx, device, not 'nvlink'");
  }
  EXPECT_THROW(count_setting("KODO_NOT_A_SETTING", 1), std::logic_error);
}

TEST(Settings, TheListingNamesEverySettingAndMisspellingsAreCaught) {
  const std::string listing = kodo::settings_listing();
  for (const kodo::SettingInfo& s : kodo::settings()) {
    EXPECT_NE(listing.find(s.name), std::string::npos) << s.name;
    EXPECT_FALSE(s.doc.empty()) << s.name;
    EXPECT_FALSE(s.fallback.empty()) << s.name;
  }
  EXPECT_EQ(setting_like("KODO_STREMS"), "KODO_STREAMS");
  EXPECT_EQ(setting_like("KODO_STALL_SECOND"), "KODO_STALL_SECONDS");
  EXPECT_EQ(setting_like("KODO_STREAMS"), std::nullopt);  // a setting itself
  EXPECT_EQ(setting_like("KODO_PROGRAM"), std::nullopt);  // nothing like it
}

// kodo::kSettings, public in 0.2, is kodo::detail's from 0.3 on: kept [[deprecated]] until
// 0.4, a program that read it still compiles, warned, and reads what settings() gives.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(Settings, TheDeprecatedTableIsWhatSettingsGives) {
  const std::span<const kodo::SettingInfo> table = kodo::kSettings;
  EXPECT_EQ(table.data(), kodo::settings().data());
  EXPECT_EQ(table.size(), kodo::settings().size());
  static_assert(kodo::kSettings.size() == kodo::detail::kSettings.size());
}
#pragma GCC diagnostic pop

// The case of the review (issue 31): one rank with a setting the others lack hung the
// job. Now every rank throws the same error, naming the setting and the ranks.
TEST(Settings, ARankWithOtherSettingsIsTheSameErrorOnEveryRank) {
  const MPI_Comm world = test_runtime().comm();
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  EXPECT_NO_THROW(agree_on_settings(world));
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  const int last = size - 1;
  {
    const Scoped s("KODO_STREAMS", rank == last ? "8" : nullptr);
    EXPECT_EQ(error_of([&] { agree_on_settings(world); }),
              kodo::detail::cat("kodo: ",
                                rank == last ? "" : kodo::detail::cat("rank ", last, ": "),
                                "KODO_STREAMS is '8' on rank ", last,
                                " but '4' on rank 0; every rank of a job must have the same "
                                "KODO_STREAMS"));
  }
  {
    // The same value written two ways agrees, and so does a default written out.
    const Scoped s("KODO_NODE_SEGMENT_BYTES", rank == last ? "2M" : "2097152");
    const Scoped t("KODO_STREAMS", rank == last ? "4" : nullptr);
    const Scoped u("KODO_CHANNELS", rank == last ? "auto" : nullptr);
    EXPECT_NO_THROW(agree_on_settings(world));
  }
  {
    // Below the range on one rank: refused at start-up, not later.
    const Scoped s("KODO_NODE_SEGMENT_BYTES", rank == last ? "1000" : nullptr);
    EXPECT_NE(error_of([&] {
                agree_on_settings(world);
              }).find("KODO_NODE_SEGMENT_BYTES must be bytes 4096 to"),
              std::string::npos);
  }
  {
    const Scoped s("KODO_STREAMS", rank == last ? "0" : nullptr);
    EXPECT_NE(error_of([&] {
                agree_on_settings(world);
              }).find("KODO_STREAMS must be integer 1 to 64, not '0'"),
              std::string::npos);
  }
  {
    // Settings a rank may have alone: what it prints, and what only its own sends,
    // pool and waits use.
    const Scoped s("KODO_PRINT_CONFIGURATION", rank == last ? "0" : nullptr);
    const Scoped t("KODO_EAGER_BYTES", rank == last ? "16K" : nullptr);
    const Scoped u("KODO_DEVICE_WAIT_SECONDS", rank == last ? "5" : nullptr);
    EXPECT_NO_THROW(agree_on_settings(world));
  }
}

}  // namespace
