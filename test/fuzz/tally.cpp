// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "fuzz.hpp"

#include <cstdio>

namespace fuzz {

using kodo::detail::cat;

Tally::Tally(std::string surface, int rank, const std::vector<std::string>& refusals,
             bool needs_refusals)
    : surface_(std::move(surface)), rank_(rank), needs_refusals_(needs_refusals) {
  for (const auto& r : refusals) refusals_.emplace_back(r);
}

void Tally::fail(const std::string& why) {
  if (failures_++ < 10)
    kodo::print_error(cat("fuzz_receive: ", surface_, ": rank ", rank_, ": ", why));
}

void Tally::refused(const Expect& expect, const std::string& what) {
  std::string kind = std::regex_replace(what, std::regex("-?[0-9]+"), "N");
  if (kind.size() > 200) kind.resize(200);
  ++kinds_[kind];
  switch (expect.kind) {
    case Expect::accepted: return fail(cat("refused a valid input: ", what));
    case Expect::refused:
      if (what != expect.refusal)
        return fail(cat("refused with '", what, "' where '", expect.refusal, "' was required"));
      ++refused_exactly_;
      return;
    case Expect::either:
      for (const auto& r : refusals_)
        if (std::regex_match(what, r)) {
          ++refused_listed_;
          return;
        }
      return fail(cat("a refusal the surface does not list: ", what));
  }
}

void Tally::check_text(const std::string& expected, const std::string& got, bool valid) {
  ++inputs_;
  ++(valid ? accepted_ : refused_exactly_);
  if (got != expected) fail(cat("answered '", got, "' where '", expected, "' was required"));
}

std::string Tally::summary() const {
  return cat("fuzz ", surface_, ": rank ", rank_, ": ", inputs_, " inputs, ", accepted_,
             " accepted, ", refused_exactly_, " refused exactly as required, ", refused_listed_,
             " refused with a listed error (", kinds_.size(), " kinds of refusal), ", failures_,
             " failures");
}

bool Tally::passed() const { return failures_ == 0 && (!needs_refusals_ || refused_exactly_ > 0); }

}  // namespace fuzz
