// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Checkpoints of a collection whose units hold every kind of state field, written on one
// rank count and restored on another (test/checkpoint_test.sh runs it):
//   checkpoint_program write DIR STEPS   writes checkpoints at steps 1..STEPS
//   checkpoint_program read DIR [APP]    restores the latest (opened as application APP,
//                                        default checkpoint_program) and checks every
//                                        field of every unit
//   checkpoint_program read-renamed DIR  ... with a unit whose state() names a field
//                                        otherwise
//   checkpoint_program read-traced DIR   ... printing "the state() of unit U runs" as
//                                        each unit's state() starts
//   checkpoint_program kill DIR          writes step 1, then rank 1 is killed while it
//                                        writes step 2
//   checkpoint_program inside-run DIR    an entry method calls write_checkpoint (must end
//                                        the job with an error, not wait forever)
//   checkpoint_program kill-moving DIR   rank 1 is killed while its units' state is written
//                                        to move them (kodo::migrate): the job must end
//   checkpoint_program forge DIR LINE TEXT
//                                        replaces line LINE of the latest manifest by
//                                        TEXT (TEXT "<cut>": drops it and every line
//                                        after it) and updates its checksum in DIR/latest
//                                        (one process, no runtime)
//   checkpoint_program forge-unit DIR UNIT OFFSET HEX
//                                        writes the bytes HEX at OFFSET of unit UNIT's
//                                        state in its rank file of the latest checkpoint
//                                        (or, with OFFSET "end", appends them to the
//                                        unit), and updates the unit's size and checksum,
//                                        the offsets of the units after it, its file's
//                                        size and checksum in the manifest, and the
//                                        manifest's in DIR/latest
//   checkpoint_program verify-xxh3 DIR   checks every checksum of the latest checkpoint
//                                        (XXH3SUMS, the manifest's files and units,
//                                        latest) with xxHash's one-shot XXH3_64bits: what
//                                        `xxhsum -H3` computes
// A restore prints "restored U units at step S" on rank 0; a failure prints the error on
// rank 0 and exits 1 on every rank.

#include <kodo/kodo.hpp>

#include <Kokkos_Core.hpp>
#include <xxhash.h>

#include <array>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr kodo::Extent3 kShape{7, 1, 1};
bool renamed_field = false;
bool trace_states = false;                // read-traced
int kill_rank = -1;                       // the rank killed while writing step 2
kodo::Runtime* inside_runtime = nullptr;  // for the inside-run mode's entry method
std::string inside_dir;

double pattern(std::int64_t unit, std::int64_t step, std::int64_t i) {
  return static_cast<double>(unit * 1000003 + step * 7919 + i) * 0.25;
}

class Cell : public kodo::WorkUnit<Cell> {
 public:
  static constexpr const char* checkpoint_name = "checkpoint_program::Cell";
  explicit Cell(const kodo::UnitInit<Cell>& init)
      : WorkUnit(init),
        unit_(init.index.x),
        values_("values", static_cast<std::size_t>(100 + 37 * unit_)),
        grid_("grid", 3, 4) {}

  void fill(std::int64_t step) {
    step_ = step;
    point_ = {pattern(unit_, step, 0), pattern(unit_, step, 1), -1.5};
    list_.assign(static_cast<std::size_t>(unit_ + step), static_cast<int>(unit_ * 10 + step));
    name_ = "unit " + std::to_string(unit_) + " at step " + std::to_string(step);
    auto host = Kokkos::create_mirror_view(values_);
    for (std::size_t i = 0; i < host.size(); ++i)
      host(i) = pattern(unit_, step, static_cast<std::int64_t>(i));
    Kokkos::deep_copy(values_, host);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) grid_(i, j) = static_cast<int>(unit_ + step + 10 * i + j);
    extra_ = Kokkos::View<float*>("extra", static_cast<std::size_t>(step + 1));
    for (int i = 0; i < 4; ++i) tag_store_[i] = static_cast<int>(unit_ * 4 + i + step);
    Kokkos::deep_copy(extra_, static_cast<float>(step));
  }

  // Everything fill(step) would have set; throws naming the first difference.
  void check(std::int64_t step) const {
    auto fail = [&](const char* what) {
      throw kodo::Error("unit " + std::to_string(unit_) + ": restored " + what +
                        " differs from step " + std::to_string(step));
    };
    if (step_ != step) fail("step");
    if (point_ != std::array<double, 3>{pattern(unit_, step, 0), pattern(unit_, step, 1), -1.5})
      fail("point");
    if (list_ != std::vector<int>(static_cast<std::size_t>(unit_ + step),
                                  static_cast<int>(unit_ * 10 + step)))
      fail("list");
    if (name_ != "unit " + std::to_string(unit_) + " at step " + std::to_string(step)) fail("name");
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, values_);
    for (std::size_t i = 0; i < host.size(); ++i)
      if (host(i) != pattern(unit_, step, static_cast<std::int64_t>(i))) fail("device view");
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        if (grid_(i, j) != static_cast<int>(unit_ + step + 10 * i + j)) fail("host view");
    for (int i = 0; i < 4; ++i)
      if (tag_store_[i] != static_cast<int>(unit_ * 4 + i + step)) fail("unmanaged view");
    auto extra = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, extra_);
    if (extra.size() != static_cast<std::size_t>(step + 1)) fail("allocated view's size");
    for (std::size_t i = 0; i < extra.size(); ++i)
      if (extra(i) != static_cast<float>(step)) fail("allocated view");
  }

  // Wrong on purpose: checkpoints are written by the main program.
  void checkpoint_from_entry_method() {
    kodo::write_checkpoint(*inside_runtime, inside_dir, {"checkpoint_program", {}}, collection());
    std::puts("unexpected: write_checkpoint returned inside run()");
  }

  template <class State>
  void state(State& s) {
    if (trace_states) {
      std::printf("checkpoint_program: the state() of unit %lld runs\n",
                  static_cast<long long>(unit_));
      std::fflush(stdout);
    }
    s(renamed_field ? "steps" : "step", step_);
    s("point", point_);
    s("list", list_);
    if (kill_rank >= 0 && step_ == 2) {
      std::fflush(stdout);
      std::raise(SIGKILL);  // half-way through the unit's file
    }
    s("name", name_);
    s("values", values_);
    s("grid", grid_);
    s("extra", extra_);  // unallocated in a unit being restored: allocated by the restore
    s("tags", tags_);    // an unmanaged view of a member array, restored in place
  }

 private:
  std::int64_t unit_;
  std::int64_t step_ = -1;
  std::array<double, 3> point_{};
  std::vector<int> list_;
  std::string name_;
  Kokkos::View<double*> values_;
  Kokkos::View<int**, Kokkos::HostSpace> grid_;
  Kokkos::View<float*> extra_;
  std::array<int, 4> tag_store_{};
  Kokkos::View<int[4], Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> tags_{
      tag_store_.data()};
};

// A unit type whose checkpoint name could not be one word of the manifest.
class BadlyNamed : public kodo::WorkUnit<BadlyNamed> {
 public:
  static constexpr const char* checkpoint_name = "two words";
  explicit BadlyNamed(const kodo::UnitInit<BadlyNamed>& init) : WorkUnit(init) {}
  template <class State>
  void state(State& s) {
    s("step", step_);
  }

 private:
  std::int64_t step_ = 0;
};

int write(kodo::Runtime& runtime, const std::string& dir, std::int64_t steps) {
  auto cells = kodo::Collection<Cell>::create(runtime, kShape);
  for (std::int64_t step = 1; step <= steps; ++step) {
    if (kill_rank >= 0 && step == 2 && runtime.rank() != kill_rank) kill_rank = -1;
    cells.for_each_local([&](Cell& c) { c.fill(step); });
    const auto report =
        kodo::write_checkpoint(runtime, dir,
                               {"checkpoint_program", {{"step", std::to_string(step)}}}, cells);
    if (runtime.rank() == 0)
      std::printf("wrote step %lld: %s, %llu bytes\n", static_cast<long long>(step),
                  report.path.c_str(), static_cast<unsigned long long>(report.bytes));
  }
  return 0;
}

int read(kodo::Runtime& runtime, const std::string& dir, const std::string& application) {
  auto cells = kodo::Collection<Cell>::create(runtime, kShape);
  const auto saved = kodo::Checkpoint::open(runtime, dir, application);
  const std::int64_t step = saved.integer("step");
  saved.restore(cells);
  int checked = 0, all = 0;
  std::string problem;
  try {
    cells.for_each_local([&](const Cell& c) {
      c.check(step);
      ++checked;
    });
  } catch (const kodo::Error& e) {
    problem = e.what();
  }
  int failed = problem.empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, runtime.comm());
  if (failed)
    kodo::print_error(kodo::detail::cat("checkpoint_program: rank ", runtime.rank(), ": ",
                                        problem));
  if (any) return 1;
  MPI_Reduce(&checked, &all, 1, MPI_INT, MPI_SUM, 0, runtime.comm());
  if (runtime.rank() == 0)
    std::printf("restored %d units at step %lld\n", all, static_cast<long long>(step));
  return 0;
}

// The latest checkpoint's folder name (from DIR/latest).
std::string latest_name(const std::string& dir) {
  std::ifstream latest(dir + "/latest");
  std::string name;
  latest >> name;
  return name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw kodo::Error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// xxhsum's form of an XXH3-64 checksum, from xxHash itself.
std::string xxh3(const std::string& bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "XXH3_%016llx",
                static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  return text;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// Rewrites the latest manifest, line by line through `change` (an empty result drops the
// line; "<cut>" drops it and the rest), and its checksum in DIR/latest, so that the
// reader's own checks (not the checksum) meet the change.
template <class F>
void rewrite_manifest(const std::string& dir, F change) {
  const std::string name = latest_name(dir);
  const std::string path = dir + "/" + name + "/manifest";
  std::ifstream in(path);
  std::ostringstream out;
  std::string l;
  for (int n = 1; std::getline(in, l); ++n) {
    const std::string changed = change(n, l);
    if (changed == "<cut>") break;
    if (!changed.empty()) out << changed << '\n';
  }
  const std::string manifest = out.str();
  std::ofstream(path, std::ios::trunc) << manifest;
  std::ofstream(dir + "/latest", std::ios::trunc) << name << ' ' << xxh3(manifest) << '\n';
}

int forge(const std::string& dir, int line, const std::string& text) {
  rewrite_manifest(dir, [&](int n, const std::string& l) { return n == line ? text : l; });
  return 0;
}

// A unit's state changed inside its rank file, and the checkpoint's records made to agree
// with it.
int forge_unit(const std::string& dir, int unit, const std::string& offset,
               const std::string& hex) {
  const std::string checkpoint = dir + "/" + latest_name(dir);
  // The unit's line: "unit 0 L RANK OFFSET BYTES XXH3_...".
  std::string rank;
  std::uint64_t at = 0, size = 0;
  {
    std::ifstream in(checkpoint + "/manifest");
    for (std::string l; std::getline(in, l);) {
      const auto w = words(l);
      if (w.size() == 7 && w[0] == "unit" && w[1] == "0" && w[2] == std::to_string(unit))
        rank = w[3], at = std::stoull(w[4]), size = std::stoull(w[5]);
    }
  }
  if (rank.empty()) throw kodo::Error("no unit " + std::to_string(unit) + " in the manifest");
  const std::string file = checkpoint + "/rank-" + rank + ".state";
  std::string data = read_bytes(file), bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  std::uint64_t grown = 0;
  if (offset == "end") {
    data.insert(at + size, bytes);
    grown = bytes.size();
  } else {
    data.replace(at + std::stoull(offset), bytes.size(), bytes);
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << data;
  rewrite_manifest(dir, [&](int, const std::string& l) {
    auto w = words(l);
    if (w.size() == 4 && w[0] == "file" && w[1] == rank)
      return "file " + rank + " " + std::to_string(data.size()) + " " + xxh3(data);
    if (w.size() != 7 || w[0] != "unit" || w[3] != rank) return l;
    const std::uint64_t o = std::stoull(w[4]);
    if (o == at && w[2] == std::to_string(unit))
      return "unit 0 " + w[2] + " " + rank + " " + w[4] + " " + std::to_string(size + grown) + " " +
             xxh3(data.substr(at, size + grown));
    if (o > at)
      return "unit " + w[1] + " " + w[2] + " " + rank + " " + std::to_string(o + grown) + " " +
             w[5] + " " + w[6];
    return l;
  });
  return 0;
}

// Every checksum of the latest checkpoint against xxHash's own one-shot XXH3_64bits.
int verify_xxh3(const std::string& dir) {
  // The library is XXH3-64 as published (its reference value for no input).
  if (XXH3_64bits(nullptr, 0) != 0x2D06800538D394C2ULL)
    throw kodo::Error("XXH3_64bits of no bytes is not 2d06800538d394c2");
  const std::string name = latest_name(dir), checkpoint = dir + "/" + name;
  const std::string manifest = read_bytes(checkpoint + "/manifest");
  if (words(read_bytes(dir + "/latest")) != std::vector<std::string>{name, xxh3(manifest)})
    throw kodo::Error("latest does not name the manifest's XXH3");
  int files = 0, units = 0;
  std::istringstream sums(read_bytes(checkpoint + "/XXH3SUMS"));
  for (std::string l; std::getline(sums, l); ++files) {
    // xxhsum's line: the checksum, two spaces, the file's name.
    const auto space = l.find("  ");
    if (space == std::string::npos ||
        xxh3(read_bytes(checkpoint + "/" + l.substr(space + 2))) != l.substr(0, space))
      throw kodo::Error("XXH3SUMS: '" + l + "' does not match its file");
  }
  std::istringstream lines(manifest);
  for (std::string l; std::getline(lines, l);) {
    const auto w = words(l);
    if (w.size() == 4 && w[0] == "file" &&
        xxh3(read_bytes(checkpoint + "/rank-" + w[1] + ".state")) != w[3])
      throw kodo::Error("manifest: '" + l + "' does not match its file");
    if (w.size() == 7 && w[0] == "unit") {
      const std::string data = read_bytes(checkpoint + "/rank-" + w[3] + ".state");
      if (xxh3(data.substr(std::stoull(w[4]), std::stoull(w[5]))) != w[6])
        throw kodo::Error("manifest: '" + l + "' does not match its bytes");
      ++units;
    }
  }
  std::printf("xxh3: %d files and %d units match XXH3_64bits\n", files, units);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 + 1 && args[0] == "forge")
    return forge(args[1], std::stoi(args[2]), args[3]);
  if (args.size() == 4 + 1 && args[0] == "forge-unit")
    return forge_unit(args[1], std::stoi(args[2]), args[3], args[4]);
  if (args.size() == 1 && args[0] == "typeid-name") {
    std::puts(typeid(Cell).name());  // what a checkpoint named Cell by before checkpoint_name
    return 0;
  }
  if (args.size() == 1 + 1 && args[0] == "verify-xxh3") {
    try {
      return verify_xxh3(args[1]);
    } catch (const kodo::Error& e) {
      kodo::print_error(std::string("checkpoint_program: ") + e.what());
      return 1;
    }
  }
  kodo::Runtime runtime(argc, argv);
  if (args.size() < 2) {
    std::fprintf(
        stderr,
        "usage: checkpoint_program write|write-badly-named|read|read-renamed|kill|kill-moving|"
        "inside-run DIR ...\n");
    return 2;
  }
  try {
    if (args[0] == "write" && args.size() == 3) return write(runtime, args[1], std::stoll(args[2]));
    if (args[0] == "write-badly-named") {
      auto units = kodo::Collection<BadlyNamed>::create(runtime, kShape);
      kodo::write_checkpoint(runtime, args[1], {"checkpoint_program", {}}, units);
      return 0;
    }
    if (args[0] == "kill") {
      kill_rank = runtime.size() > 1 ? 1 : 0;
      return write(runtime, args[1], 2);
    }
    if (args[0] == "kill-moving") {
      kill_rank = runtime.size() > 1 ? 1 : 0;
      auto cells = kodo::Collection<Cell>::create(runtime, kShape);
      cells.for_each_local([&](Cell& c) { c.fill(runtime.rank() == kill_rank ? 2 : 1); });
      std::vector<int> owners(static_cast<std::size_t>(cells.size()));
      for (std::size_t l = 0; l < owners.size(); ++l)
        owners[l] = (cells.owner(kShape.delinear(static_cast<std::int64_t>(l))) + 1) %
                    runtime.size();
      kodo::migrate(cells, owners);
      std::puts("unexpected: the migration ended");
      return 0;
    }
    if (args[0] == "inside-run") {
      inside_runtime = &runtime;
      inside_dir = args[1];
      auto cells = kodo::Collection<Cell>::create(runtime, kShape);
      cells.broadcast_local<&Cell::checkpoint_from_entry_method>();
      runtime.run();
      return 0;
    }
    if (args[0] == "read-renamed") renamed_field = true;
    if (args[0] == "read-traced") trace_states = true;
    if (args[0] == "read" || args[0] == "read-renamed" || args[0] == "read-traced")
      return read(runtime, args[1], args.size() > 2 ? args[2] : "checkpoint_program");
  } catch (const kodo::Error& e) {
    if (runtime.rank() == 0) kodo::print_error(std::string("checkpoint_program: ") + e.what());
    return 1;
  }
  kodo::print_error("checkpoint_program: unknown mode " + args[0]);
  return 2;
}
