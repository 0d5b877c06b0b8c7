// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
/// @file
/// kodo's settings: the KODO_* environment variables, in one table that drives how each is
/// parsed (strictly, within its range), the --kodo-help listing, the configuration dump
/// (KODO_PRINT_CONFIGURATION=1) and the start-up check that every rank of a job has the
/// same valid settings. A setting that is invalid on one rank, or differs between ranks,
/// is the same kodo::Error on every rank, naming it: a rank must never run with settings
/// its peers do not share (one rank with KODO_STREAMS=0 used to hang the job).

#include <mpi.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kodo {

/// How a setting's text is read.
enum class SettingKind {
  count,    ///< decimal digits, from `least` to `most`
  bytes,    ///< decimal digits, optionally followed by K, M or G; from `least` to `most`
  seconds,  ///< a positive decimal number up to `most`
  flag,     ///< 0 or 1
  choice,   ///< one of `choices` (separated by '|')
  text,     ///< any text
};

/// One KODO_* environment variable: its name, how it is parsed, its range and default,
/// and what it does.
struct SettingInfo {
  std::string_view name;  ///< the variable, e.g. "KODO_STREAMS"
  SettingKind kind;       ///< how its text is parsed
  /// count, bytes; seconds: `most` only
  ///@{
  std::uint64_t least = 0, most = 0;
  ///@}
  std::string_view choices;        ///< choice
  std::string_view fallback;       ///< what holds when it is unset, in words
  bool same_on_every_rank = true;  ///< false: a rank may differ (it changes nothing shared)
  std::string_view doc;            ///< what it does, in words
};

namespace detail {
// Every setting kodo reads (settings() is the public way to them).
inline constexpr std::array<SettingInfo, 16> kSettings{{
    {"KODO_STREAMS",
     SettingKind::count,
     1,
     64,
     {},
     "4",
     true,
     "streams per priority in each rank's pool (its units share them)"},
    {"KODO_DEVICE", SettingKind::choice, 0, 0, "auto|gpu|host", "auto", true,
     "what the build must run on: gpu or host makes the other an error"},
    {"KODO_SHARE_GPUS",
     SettingKind::flag,
     0,
     0,
     {},
     "0",
     true,
     "1 lets ranks of a node share a GPU (else more ranks than GPUs is an error)"},
    {"KODO_CHANNELS", SettingKind::choice, 0, 0, "auto|ucx|device", "auto", true,
     "receive rings between ranks of a node: auto (same-node route), ucx, device (route or error)"},
    {"KODO_NODE_SEGMENT_BYTES",
     SettingKind::bytes,
     4096,
     std::uint64_t{1} << 34,
     {},
     "8M host backend, 1M GPUs",
     true,
     "each rank's memory shared with its node (same-node route)"},
    {"KODO_EAGER_BYTES",
     SettingKind::bytes,
     0,
     std::uint64_t{64} << 20,
     {},
     "8192",
     false,
     "calls up to this size travel in one message; larger ones by rendezvous"},
    {"KODO_CALL_POOL_BYTES",
     SettingKind::bytes,
     0,
     std::uint64_t{1} << 62,
     {},
     "1G",
     false,
     "idle memory the pool of incoming calls' views may keep"},
    {"KODO_MIGRATION_PIECE_BYTES",
     SettingKind::bytes,
     std::uint64_t{64} << 10,
     std::uint64_t{1} << 30,
     {},
     "32M",
     true,
     "moving units' views travel in pieces of this size, through slots that GPU builds keep "
     "for the job once units have moved (4 a rank receives into between ranks of one node, "
     "else 4 each way; host builds: at most 256 KiB between ranks of one node)"},
    {"KODO_RECORD", SettingKind::choice, 0, 0, "auto|on|off", "auto", false,
     "record each turn's device work and launch it as one graph: auto (CUDA builds), on (the "
     "host backend groups it, for tests), off"},
    {"KODO_UCX_ERROR_MODE", SettingKind::choice, 0, 0, "none|peer", "none", true,
     "peer: UCX reports a dead peer, and kodo names it (a little slower)"},
    {"KODO_DEVICE_WAIT_SECONDS",
     SettingKind::seconds,
     0,
     1000000000,
     {},
     "60",
     false,
     "how long a device wait for a same-node transfer lasts before it is reported"},
    {"KODO_STALL_SECONDS",
     SettingKind::seconds,
     0,
     1000000000,
     {},
     "600",
     true,
     "after this long without progress every rank reports what it waits for, a rank whose "
     "loop has not turned (an entry method that blocks) says where, and so does a rank that "
     "waits this long in a collective call of kodo's (start-up and end, creating a collection, "
     "a checkpoint, a migration, a balance point, building a step program), naming the peer "
     "and message where it knows them; set it above the longest entry method (on the host "
     "backend kernels run inside them) and collective call"},
    {"KODO_STALL_EXIT",
     SettingKind::flag,
     0,
     0,
     {},
     "1",
     true,
     "1 ends the job after a stall report: run() throws on every rank, or a blocked rank exits "
     "with status 3; 0 only reports (the job waits on)"},
    {"KODO_TRACE",
     SettingKind::text,
     0,
     0,
     {},
     "unset (no trace)",
     false,
     "each rank writes PREFIX.rank<R>.json, a Chrome trace"},
    {"KODO_PRINT_CONFIGURATION",
     SettingKind::flag,
     0,
     0,
     {},
     "0",
     false,
     "1 makes rank 0 print every setting's value at start-up"},
    {"KODO_PRINT_PLACEMENT",
     SettingKind::flag,
     0,
     0,
     {},
     "0",
     true,
     "1 makes rank 0 print where each rank runs at start-up (node-local rank, GPU, cpus, NUMA)"},
}};
}  // namespace detail

/// Every setting kodo reads, and their listing as --kodo-help prints it (one setting a
/// line: name, kind and range, default, what it does).
///@{
std::span<const SettingInfo> settings();
std::string settings_listing();
///@}

/// @deprecated Until 0.4: the table behind settings(), which a program reads instead (the
/// table's type changes whenever kodo adds a setting).
[[deprecated("kodo::kSettings is internal from 0.3 on: use kodo::settings()")]]
inline constexpr const auto& kSettings = detail::kSettings;

namespace detail {

// The entry of `name` in kSettings; a name not there is a bug in kodo (std::logic_error).
constexpr const SettingInfo& setting_info(std::string_view name) {
  for (const SettingInfo& s : kSettings)
    if (s.name == name) return s;
  throw std::logic_error("a setting kodo does not list");
}

// The value of a setting from the environment, parsed as its kind says and checked
// against its range: `fallback` (or nothing) when the variable is unset or empty; a
// kodo::Error naming the variable, its range and the text when it is anything else.
std::uint64_t count_setting(std::string_view name, std::uint64_t fallback);
std::uint64_t bytes_setting(std::string_view name, std::uint64_t fallback);
std::optional<double> seconds_setting(std::string_view name);
bool flag_setting(std::string_view name);           // the table's fallback when unset
std::string choice_setting(std::string_view name);  // the first choice when unset
std::string text_setting(std::string_view name);    // empty when unset

// `text` parsed as a number of bytes for `name` (digits, then K, M or G), at most `most`.
std::uint64_t parse_bytes(std::string_view name, std::string_view text, std::uint64_t most);

// Collective over `comm`, once at start-up: every setting parsed on every rank; one
// invalid on some rank, or (when same_on_every_rank) set differently on two ranks, is a
// kodo::Error on every rank naming it, the ranks and their values. Rank 0 warns about a KODO_
// variable that looks like a misspelt setting, and prints the configuration if
// KODO_PRINT_CONFIGURATION=1.
void agree_on_settings(MPI_Comm comm);

// The setting `name` is a misspelling of (within two edits, not itself a setting), if
// any: what agree_on_settings warns about.
std::optional<std::string_view> setting_like(std::string_view name);

}  // namespace detail
}  // namespace kodo
