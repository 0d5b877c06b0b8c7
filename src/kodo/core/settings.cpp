// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include <kodo/core/settings.hpp>

#include <kodo/core/detail/agree.hpp>
#include <kodo/core/detail/mpi_check.hpp>
#include <kodo/core/detail/numeric.hpp>
#include <kodo/core/error.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

namespace kodo {

using detail::cat;

std::span<const SettingInfo> settings() { return detail::kSettings; }

namespace {

// The range of a setting in words, as the listing and the errors give it.
std::string range_of(const SettingInfo& s) {
  switch (s.kind) {
    case SettingKind::count: return cat("integer ", s.least, " to ", s.most);
    case SettingKind::bytes:
      return cat("bytes ", s.least, " to ", s.most, " (digits, optionally then K, M or G)");
    case SettingKind::seconds: return cat("seconds, above 0 and at most ", s.most);
    case SettingKind::flag: return "0 or 1";
    case SettingKind::choice: {
      std::string out = "one of ";
      for (const char c : s.choices) out += c == '|' ? std::string(", ") : std::string(1, c);
      return out;
    }
    case SettingKind::text: return "text";
  }
  return {};
}

// The variable's text; nothing when it is unset or empty (both mean "not set").
std::optional<std::string_view> raw(std::string_view name) {
  const char* text = std::getenv(std::string(name).c_str());
  if (!text || !*text) return std::nullopt;
  return std::string_view(text);
}

[[noreturn]] void refuse(const SettingInfo& s, std::string_view text) {
  throw Error(cat(s.name, " must be ", range_of(s), ", not '", text, "'"));
}

std::uint64_t parse_count(const SettingInfo& s, std::string_view text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < s.least || v > s.most)
    refuse(s, text);
  return v;
}

double parse_seconds(const SettingInfo& s, std::string_view text) {
  double v = 0;  // decimal only: no spaces, hex or locale (strtod took all three)
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
  if (ec != std::errc{} || end != text.data() + text.size() || !(v > 0) ||
      v > static_cast<double>(s.most))
    refuse(s, text);
  return v;
}

std::optional<std::string> checked_value(const SettingInfo& s, std::string_view text);

// A bytes setting's text within its range, both ends.
// One error for every value out of range, naming the setting's whole range (above its
// most, parse_bytes alone would say "from 0").
std::uint64_t parse_bytes_in_range(const SettingInfo& s, std::string_view text) {
  std::uint64_t v = 0;
  try {
    v = detail::parse_bytes(s.name, text, s.most);
  } catch (const Error&) {
    refuse(s, text);
  }
  if (v < s.least) refuse(s, text);
  return v;
}

// Checks the variable's text as its kind says; returns its value in a form every rank
// compares: the default's when unset (so "KODO_STREAMS=4" agrees with no KODO_STREAMS),
// nothing when unset without a default value.
std::optional<std::string> checked_text(const SettingInfo& s) {
  const auto set = raw(s.name);
  if (!set) {
    try {
      return s.kind == SettingKind::text ? std::nullopt : checked_value(s, s.fallback);
    } catch (const Error&) {
      return std::nullopt;  // a default in words ("unset (no watch)")
    }
  }
  return checked_value(s, *set);
}

std::optional<std::string> checked_value(const SettingInfo& s, std::string_view text) {
  const std::optional<std::string_view> set = text;
  switch (s.kind) {
    case SettingKind::count: return std::to_string(parse_count(s, *set));
    case SettingKind::bytes: return std::to_string(parse_bytes_in_range(s, *set));
    case SettingKind::seconds: return cat(parse_seconds(s, *set));
    case SettingKind::flag:
      if (*set != "0" && *set != "1") refuse(s, *set);
      return std::string(*set);
    case SettingKind::choice: {
      std::string_view rest = s.choices;
      while (!rest.empty()) {
        const auto bar = rest.find('|');
        if (rest.substr(0, bar) == *set) return std::string(*set);
        rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
      }
      refuse(s, *set);
    }
    case SettingKind::text: return std::string(*set);
  }
  return std::nullopt;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string settings_listing() {
  std::string out =
      "kodo's settings (environment variables; every rank of a job must have the same):\n";
  for (const SettingInfo& s : detail::kSettings)
    out += cat("  ", s.name, "\n      ", s.doc, "\n      ", range_of(s), "; default ", s.fallback,
               s.same_on_every_rank ? "" : "; may differ between ranks", "\n");
  return out;
}

namespace detail {

std::uint64_t parse_bytes(std::string_view name, std::string_view text, std::uint64_t most) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  const int shift = suffix.empty()  ? 0
                    : suffix == "K" ? 10
                    : suffix == "M" ? 20
                    : suffix == "G" ? 30
                                    : -1;
  const auto bytes = error == std::errc{} && shift >= 0
                         ? checked_mul(value, std::uint64_t{1} << shift)
                         : std::nullopt;
  if (!bytes || *bytes > most)
    throw Error(cat(name, " must be a number of bytes from 0 to ", most,
                    " (digits, optionally followed by K, M or G), not '", text, "'"));
  return *bytes;
}

std::uint64_t count_setting(std::string_view name, std::uint64_t fallback) {
  const SettingInfo& s = setting_info(name);
  const auto text = raw(name);
  return text ? parse_count(s, *text) : fallback;
}

std::uint64_t bytes_setting(std::string_view name, std::uint64_t fallback) {
  const auto text = raw(name);
  return text ? parse_bytes_in_range(setting_info(name), *text) : fallback;
}

std::optional<double> seconds_setting(std::string_view name) {
  const SettingInfo& s = setting_info(name);
  const auto text = raw(name);
  if (!text) return std::nullopt;
  return parse_seconds(s, *text);
}

bool flag_setting(std::string_view name) {
  const SettingInfo& s = setting_info(name);
  const auto text = checked_text(s);
  return text ? *text == "1" : s.fallback == "1";
}

std::string choice_setting(std::string_view name) {
  const SettingInfo& s = setting_info(name);
  const auto text = checked_text(s);
  return text ? *text : std::string(s.choices.substr(0, s.choices.find('|')));
}

std::string text_setting(std::string_view name) {
  const auto text = raw(setting_info(name).name);
  return text ? std::string(*text) : std::string();
}

std::optional<std::string_view> setting_like(std::string_view name) {
  for (const SettingInfo& s : kSettings) {
    if (s.name == name) return std::nullopt;
  }
  for (const SettingInfo& s : kSettings)
    if (edit_distance(name, s.name) <= 2) return s.name;
  return std::nullopt;
}

void agree_on_settings(MPI_Comm comm) {
  int rank = 0;
  KODO_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  // This rank's settings as one text, "NAME=value\n" for each that must agree ("NAME\n"
  // when unset), and the first problem with them.
  std::string mine, problem;
  for (const SettingInfo& s : kSettings) {
    std::optional<std::string> text;
    try {
      text = checked_text(s);
    } catch (const Error& e) {
      if (problem.empty()) problem = e.what();
    }
    if (s.same_on_every_rank) mine += text ? cat(s.name, "=", *text, "\n") : cat(s.name, "\n");
  }
  // Rank 0's, to every rank, which names the first setting that differs from it.
  std::string root = mine;
  unsigned long long length = root.size();
  KODO_MPI_CHECK(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm));
  root.resize(length);
  KODO_MPI_CHECK(MPI_Bcast(root.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
  if (problem.empty() && root != mine) {
    const auto lines = [](const std::string& all) {
      std::vector<std::string> out;
      for (std::size_t at = 0; at < all.size();) {
        const auto end = all.find('\n', at);
        out.push_back(all.substr(at, end - at));
        at = end + 1;
      }
      return out;
    };
    const auto theirs = lines(root), ours = lines(mine);
    for (std::size_t i = 0; i < std::min(theirs.size(), ours.size()); ++i) {
      if (theirs[i] == ours[i]) continue;
      const auto value = [](const std::string& line) {
        const auto eq = line.find('=');
        return eq == std::string::npos ? std::string("unset") : "'" + line.substr(eq + 1) + "'";
      };
      const std::string name = ours[i].substr(0, ours[i].find('='));
      problem = cat(name, " is ", value(ours[i]), " on rank ", rank, " but ", value(theirs[i]),
                    " on rank 0; every rank of a job must have the same ", name);
      break;
    }
  }
  agree_and_report(comm, problem);
  if (rank != 0) return;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry = *e;
    const std::string_view name = entry.substr(0, entry.find('='));
    if (!name.starts_with("KODO_")) continue;
    if (const auto like = setting_like(name))
      print_error(cat("kodo: warning: ", name, " is not a kodo setting; did you mean ", *like,
                      "? (--kodo-help lists them)"));
  }
  if (flag_setting("KODO_PRINT_CONFIGURATION")) {
    std::string out = "kodo: configuration (rank 0):\n";
    for (const SettingInfo& s : kSettings) {
      const auto text = raw(s.name);
      out +=
          cat("  ", s.name, " = ", text ? std::string(*text) : cat(s.fallback, " (default)"), "\n");
    }
    print_error(out);
  }
}

}  // namespace detail
}  // namespace kodo
