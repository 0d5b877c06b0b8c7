// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#pragma once
// The fuzz test's frame (fuzz_receive): a surface of the receive code makes inputs from
// a seeded generator and hands each to kodo as a peer's bytes would come; the Tally
// decides whether what kodo did was right. Every input carries what must become of it:
// - accepted: a valid input, which must be taken (and its effect happen);
// - refused: an input with one field made wrong on purpose, which must be refused with
//   exactly the error for that field (its whole text);
// - either: randomly mutated bytes, which may be taken or refused, but only with one of
//   the errors the surface lists (its refusals: a new message fails the run until a
//   reviewer adds it).
// Anything else (another exception type, a crash, a sanitizer report) fails too.

#include <kodo/kodo.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace fuzz {

struct Expect {
  enum Kind { accepted, refused, either };
  Kind kind = either;
  std::string refusal;  // refused: the error's whole text
  static Expect accept() { return {accepted, {}}; }
  static Expect refuse(std::string why) { return {refused, std::move(why)}; }
};

class Tally {
 public:
  // `refusals`: every error an `either` input may get (ECMAScript, each matched against
  // the whole text of the error).
  // `needs_refusals`: a run passes only if some input was refused exactly as required
  // (surfaces whose inputs are never refused say false).
  Tally(std::string surface, int rank, const std::vector<std::string>& refusals,
        bool needs_refusals = true);

  // Runs `attempt` (which hands one input to kodo) and checks what became of it.
  template <class Attempt>
  void check(const Expect& expect, Attempt&& attempt) {
    ++inputs_;
    try {
      attempt();
    } catch (const kodo::Error& e) {
      return refused(expect, e.what());
    } catch (const std::exception& e) {
      return fail(kodo::detail::cat("not a kodo::Error: ", e.what()));
    }
    ++accepted_;
    if (expect.kind == Expect::refused)
      fail(kodo::detail::cat("accepted; it must be refused with '", expect.refusal, "'"));
  }
  // For a surface whose answer is a text (not an exception): it must equal `expected`.
  void check_text(const std::string& expected, const std::string& got, bool valid);

  void fail(const std::string& why);
  long inputs() const { return inputs_; }
  long accepted() const { return accepted_; }
  bool needs_refusals() const { return needs_refusals_; }
  long failures() const { return failures_; }
  // One line: inputs, accepted, refused (exactly as required / listed), failures.
  std::string summary() const;
  // Each kind of refusal seen (digits shown as N), with its count.
  const std::map<std::string, long>& kinds() const { return kinds_; }
  // Whether this rank's run reached what it must: no failure and, where refusals are
  // needed, inputs refused exactly as required. (Inputs accepted: by some rank.)
  bool passed() const;

 private:
  void refused(const Expect& expect, const std::string& what);

  std::string surface_;
  int rank_;
  bool needs_refusals_;
  std::vector<std::regex> refusals_;
  long inputs_ = 0, accepted_ = 0, refused_exactly_ = 0, refused_listed_ = 0, failures_ = 0;
  std::map<std::string, long> kinds_;
};

// What a surface gets: the running rank (each of the 2 ranks fuzzes itself, posing as
// the other), a generator and a budget.
struct Context {
  kodo::Runtime& runtime;
  std::mt19937_64 rng;
  std::chrono::steady_clock::time_point until;
  long max_inputs;

  int self() const { return runtime.rank(); }
  int peer() const { return 1 - runtime.rank(); }
  bool more(const Tally& t) const {
    return t.inputs() < max_inputs && std::chrono::steady_clock::now() < until;
  }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  std::uint64_t word() { return rng(); }
  // An integer a mutation sets a field to: an edge value, or any.
  std::int64_t edge();
};

// For the surfaces where rank 1 alters what it sends over MPI: rank 1 chooses each input
// and tells rank 0 first, on a communicator of their own.
class Told {
 public:
  Told() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }
  ~Told() { MPI_Comm_free(&comm_); }
  Told(const Told&) = delete;
  Told& operator=(const Told&) = delete;
  // Whether rank 1 goes on to another input (within its budget).
  bool more(const Context& c, const Tally& t) {
    int more = c.self() == 1 && c.more(t) ? 1 : 0;
    MPI_Bcast(&more, 1, MPI_INT, 1, comm_);
    return more != 0;
  }
  // `value` as rank 1 has it (trivially copyable).
  template <class T>
  T operator()(T value) {
    MPI_Bcast(&value, sizeof value, MPI_BYTE, 1, comm_);
    return value;
  }
  MPI_Comm comm() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// fuzz_receive's one MPI_Isend (migration_headers.cpp) hands every send to this where a
// surface sets it (migration_records): it returns whether it sent the data itself
// (altered; *rc: MPI's answer), or false to leave the send to MPI.
using SendHook = bool (*)(const void* data, int count, MPI_Datatype type, int to, int tag,
                          MPI_Comm comm, int* rc);
inline SendHook migration_send = nullptr;

// The surfaces (one file each). Each returns its tally; all run on both ranks at once.
Tally fuzz_calls(Context& c);              // entry-method calls by eager active message
Tally fuzz_rendezvous(Context& c);         // the same announced by rendezvous
Tally fuzz_links(Context& c);              // channel link announcements and ring messages
Tally fuzz_reductions(Context& c);         // reduction partials and results
Tally fuzz_faults(Context& c);             // a peer's fault report
Tally fuzz_channel_tags(Context& c);       // tagged transfers aimed at another link's receives
Tally fuzz_ring_words(Context& c);         // the words of a same-node ring its sender writes
Tally fuzz_counts(Context& c);             // a peer's report to the termination wave
Tally fuzz_balance_counts(Context& c);     // a peer's report at a balance point
Tally fuzz_migration_headers(Context& c);  // a peer's migration headers
Tally fuzz_migration_records(Context& c);  // the records of the unit a peer moves here
Tally fuzz_route_offers(Context& c);       // the slots a peer offers for moving views (same node)
Tally fuzz_checkpoint_gather(Context& c);  // a peer's checkpoint entries, gathered to rank 0

}  // namespace fuzz
