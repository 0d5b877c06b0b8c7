// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Received message headers (comm/detail/wire.hpp): every field is checked against its range.

#include <kodo/comm/detail/wire.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

using kodo::detail::MessageHeader;
using kodo::detail::MessageKind;

TEST(WireHeader, EveryFieldIsCheckedAgainstItsRange) {
  const auto check = [](MessageHeader h) { return kodo::detail::check_received_header(h, 0, 4); };
  const MessageHeader good{MessageKind::invoke, 0, 1, 5, 2};
  EXPECT_EQ(check(good), "");
  auto with = [&](auto change) {
    MessageHeader h = good;
    change(h);
    return check(h);
  };
  EXPECT_NE(with([](auto& h) { h.kind = MessageKind::callback; }).find("local to a rank"),
            std::string::npos);
  EXPECT_NE(with([](auto& h) { h.kind = static_cast<MessageKind>(77); }).find("field kind"),
            std::string::npos);
  EXPECT_NE(with([](auto& h) { h.source_rank = 0; }).find("field source_rank"), std::string::npos);
  EXPECT_NE(with([](auto& h) { h.source_rank = 4; }).find("field source_rank"), std::string::npos);
  EXPECT_NE(with([](auto& h) { h.source_rank = -1; }).find("field source_rank"), std::string::npos);
  EXPECT_NE(with([](auto& h) { h.flags = 6; }).find("field flags"), std::string::npos);
  EXPECT_NE(with([](auto& h) {
              h.kind = MessageKind::reduction_partial;
              h.flags = kodo::detail::kHasAttachments;
            }).find("field flags"),
            std::string::npos);
  EXPECT_NE(with([](auto& h) { h.target = -3; }).find("field target"), std::string::npos);
}

}  // namespace
