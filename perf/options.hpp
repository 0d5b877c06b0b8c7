// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The command line of a benchmark. A bench declares each option (name, kind, range,
// default, description) and gets a reference that holds its value once parsed; --help
// lists them. An unknown option, a missing value, text that is not a number and a
// number out of range are errors that name the option and the text: rank 0 prints it
// with the usage and every rank exits with status 2 (each parses the same arguments).
//
//   perf::Options options("odf_overhead_bench", "Time per step of ...");
//   const auto& steps = options.integer("--steps", 2000, 2, 1 << 30, "timed steps per run");
//   if (const auto exit = options.parse(runtime, argc, argv)) return *exit;

#include <kodo/kodo.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace perf {

class Options {
 public:
  using Extent = std::array<std::int64_t, 3>;

  // `about` follows the usage line in --help.
  Options(std::string program, std::string about)
      : program_(std::move(program)), about_(std::move(about)) {}
  Options(const Options&) = delete;
  Options& operator=(const Options&) = delete;

  // An integer from `min` to `max`.
  const std::int64_t& integer(std::string name, std::int64_t fallback, std::int64_t min,
                              std::int64_t max, std::string doc) {
    Option& o = add(std::move(name), Kind::integer, std::to_string(fallback), std::move(doc));
    o.min = min, o.max = max;
    return o.number;
  }

  // Comma-separated integers, each from `min` to `max`. `shown` stands for the default
  // in --help where the list itself is long.
  const std::vector<std::int64_t>& integers(std::string name, std::string fallback,
                                            std::int64_t min, std::int64_t max, std::string doc,
                                            std::string shown = "") {
    Option& o = add(std::move(name), Kind::integers, std::move(fallback), std::move(doc));
    o.min = min, o.max = max, o.shown = std::move(shown);
    return o.numbers;
  }

  // Comma-separated blocks, each N (an N^3 block) or XxYxZ, each extent from `min` to `max`.
  const std::vector<Extent>& extents(std::string name, std::string fallback, std::int64_t min,
                                     std::int64_t max, std::string doc) {
    Option& o = add(std::move(name), Kind::extents, std::move(fallback), std::move(doc));
    o.min = min, o.max = max;
    return o.blocks;
  }

  // Comma-separated words, each one of `choices`.
  const std::vector<std::string>& words(std::string name, std::vector<std::string> choices,
                                        std::string fallback, std::string doc) {
    Option& o = add(std::move(name), Kind::words, std::move(fallback), std::move(doc));
    o.choices = std::move(choices);
    return o.list;
  }

  // A file to write ("" unless given).
  const std::string& file(std::string name, std::string doc) {
    return add(std::move(name), Kind::file, "", std::move(doc)).text;
  }

  // Answers --help and --version (exit status 0) and bad options (2: rank 0 says what
  // is wrong); nothing when the bench is to run with the options parsed.
  std::optional<int> parse(const kodo::Runtime& runtime, int argc, char** argv) {
    if (runtime.print_usage_if_requested(usage())) return 0;
    try {
      parse(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::invalid_argument& e) {
      if (runtime.rank() == 0)
        kodo::print_error(program_ + ": error: " + e.what() + "\n" + usage());
      return 2;
    }
    return std::nullopt;
  }

  // The arguments after the program's name (Kokkos' and --help taken out). Throws
  // std::invalid_argument naming the option and the text at fault.
  void parse(const std::vector<std::string>& args) {
    for (Option& o : options_) assign(o, o.fallback);
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto o = std::find_if(options_.begin(), options_.end(),
                                  [&](const Option& x) { return x.name == args[i]; });
      if (o == options_.end()) throw std::invalid_argument("unknown option '" + args[i] + "'");
      if (i + 1 >= args.size() || args[i + 1].empty() || args[i + 1].starts_with("--"))
        throw std::invalid_argument(o->name + " needs a value");
      assign(*o, args[++i]);
    }
  }

  std::string usage() const {
    std::string synopsis = "usage: " + program_, text;
    std::size_t width = 0;
    for (const Option& o : options_) width = std::max(width, o.name.size());
    std::size_t column = synopsis.size();
    for (const Option& o : options_) {
      const std::string item = "[" + o.name + " " + placeholder(o) + "]";
      if (column + 1 + item.size() > kColumns) {
        synopsis += "\n" + std::string(program_.size() + 8, ' ');
        column = program_.size() + 8;
      } else {
        synopsis += ' ';
        ++column;
      }
      synopsis += item;
      column += item.size();
    }
    for (const Option& o : options_)
      text += wrap("  " + o.name + std::string(width + 2 - o.name.size(), ' '), o.doc + details(o),
                   width + 4);
    return synopsis + "\n" + wrap("", about_, 0) + text;
  }

 private:
  enum class Kind { integer, integers, extents, words, file };
  struct Option {
    std::string name, fallback, doc, shown;
    Kind kind = Kind::integer;
    std::int64_t min = 0, max = 0;
    std::vector<std::string> choices;
    // The value, in the member of its kind.
    std::int64_t number = 0;
    std::vector<std::int64_t> numbers;
    std::vector<Extent> blocks;
    std::vector<std::string> list;
    std::string text;
  };
  static constexpr std::size_t kColumns = 90;

  Option& add(std::string name, Kind kind, std::string fallback, std::string doc) {
    Option& o = options_.emplace_back();
    o.name = std::move(name), o.kind = kind, o.fallback = std::move(fallback);
    o.doc = std::move(doc);
    return o;
  }

  // "1 to 2^30".
  static std::string power(std::int64_t v) {
    if (v >= 1024 && (v & (v - 1)) == 0)
      return "2^" + std::to_string(std::countr_zero(static_cast<std::uint64_t>(v)));
    return std::to_string(v);
  }
  static std::string range(const Option& o) { return power(o.min) + " to " + power(o.max); }

  static std::string either(const std::vector<std::string>& choices) {  // "a, b or c"
    std::string s;
    for (std::size_t k = 0; k < choices.size(); ++k)
      s += (k == 0 ? "" : k + 1 == choices.size() ? " or " : ", ") + choices[k];
    return s;
  }

  static std::string placeholder(const Option& o) {
    switch (o.kind) {
      case Kind::integer: return "N";
      case Kind::integers: return "N,...";
      case Kind::extents: return "N|XxYxZ,...";
      case Kind::words: {
        std::string s;
        for (const auto& c : o.choices) s += (s.empty() ? "" : ",") + c;
        return s;
      }
      case Kind::file: return "FILE";
    }
    return "";
  }

  static std::string details(const Option& o) {
    const std::string shown = o.shown.empty() ? o.fallback : o.shown;
    switch (o.kind) {
      case Kind::integer: return " (" + range(o) + "; default " + shown + ")";
      case Kind::integers:
      case Kind::extents: return " (each " + range(o) + "; default " + shown + ")";
      case Kind::words: return " (any of " + either(o.choices) + "; default " + shown + ")";
      case Kind::file: return "";
    }
    return "";
  }

  // `head` then `body`, its words wrapped to kColumns, later lines indented by `indent`.
  static std::string wrap(const std::string& head, const std::string& body, std::size_t indent) {
    std::string out = head, word;
    std::size_t column = head.size();
    bool first = true;  // no space before the first word
    auto put = [&] {
      if (word.empty()) return;
      if (!first && column + 1 + word.size() > kColumns) {
        out += "\n" + std::string(indent, ' ');
        column = indent;
      } else if (!first) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
      word.clear();
      first = false;
    };
    for (char c : body) {
      if (c == ' ' || c == '\n')
        put();
      else
        word += c;
    }
    put();
    return out + "\n";
  }

  // The comma-separated items of `text`, none empty.
  static std::vector<std::string> items(const Option& o, const std::string& text) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (true) {
      const std::size_t comma = text.find(',', at);
      out.push_back(text.substr(at, comma == std::string::npos ? comma : comma - at));
      if (out.back().empty())
        throw std::invalid_argument(o.name +
                                    " needs a comma-separated list without empty "
                                    "items, not '" +
                                    text + "'");
      if (comma == std::string::npos) return out;
      at = comma + 1;
    }
  }

  // `item` (part of the value `text`) as an integer in the option's range.
  static std::int64_t to_integer(const Option& o, const std::string& item,
                                 const std::string& text) {
    std::int64_t v = 0;
    const char* end = item.data() + item.size();
    const auto [p, ec] = std::from_chars(item.data(), end, v);
    const std::string in = item == text ? "" : " in '" + text + "'";
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && p == end && v > o.max) ||
        (ec == std::errc() && p == end && v < o.min))
      throw std::invalid_argument(o.name + " must be " + range(o) + ", not '" + item + "'" + in);
    if (ec != std::errc() || p != end || item.empty())
      throw std::invalid_argument(o.name + " needs " +
                                  (o.kind == Kind::integer ? "an integer" : "integers") +
                                  ", not '" + item + "'" + in);
    return v;
  }

  static void assign(Option& o, const std::string& text) {
    switch (o.kind) {
      case Kind::integer: o.number = to_integer(o, text, text); return;
      case Kind::integers:
        o.numbers.clear();
        for (const auto& item : items(o, text)) o.numbers.push_back(to_integer(o, item, text));
        return;
      case Kind::extents:
        o.blocks.clear();
        for (const auto& item : items(o, text)) {
          std::vector<std::int64_t> n;
          std::size_t at = 0;
          for (std::size_t x; (x = item.find('x', at)) != std::string::npos; at = x + 1)
            n.push_back(to_integer(o, item.substr(at, x - at), text));
          n.push_back(to_integer(o, item.substr(at), text));
          if (n.size() == 1) n = {n[0], n[0], n[0]};  // N alone: N^3
          if (n.size() != 3)
            throw std::invalid_argument(o.name + " needs blocks N or XxYxZ, not '" + item +
                                        "' in '" + text + "'");
          o.blocks.push_back({n[0], n[1], n[2]});
        }
        return;
      case Kind::words:
        o.list.clear();
        for (const auto& item : items(o, text)) {
          if (std::find(o.choices.begin(), o.choices.end(), item) == o.choices.end())
            throw std::invalid_argument(o.name + " takes " + either(o.choices) + ", not '" + item +
                                        "'" + (item == text ? "" : " in '" + text + "'"));
          o.list.push_back(item);
        }
        return;
      case Kind::file: o.text = text; return;
    }
  }

  std::string program_, about_;
  std::deque<Option> options_;  // a deque: the references handed out stay valid
};

}  // namespace perf
