// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "options.hpp"

#include <kodo/tasking/units/decomposition.hpp>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace jacobi {
namespace {

constexpr std::uint64_t kMostPoints = std::uint64_t{1} << 50;
constexpr std::int64_t kMostUpdates = std::int64_t{1} << 62;

std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t min) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty())
    throw std::invalid_argument(flag + " needs an integer, not '" + text + "'");
  if (v < min)
    throw std::invalid_argument(flag + " must be at least " + std::to_string(min) + ", not " +
                                text);
  return v;
}

// The value after `flag`, which must be one of `choices`.
std::string parse_choice(const std::vector<std::string>& args, std::size_t& i,
                         std::initializer_list<const char*> choices) {
  const std::string& flag = args[i];
  if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
  const std::string& value = args[++i];
  std::string listed;  // "a, b or c"
  std::size_t k = 0;
  for (const char* c : choices) {
    if (value == c) return value;
    if (k > 0) listed += k + 1 == choices.size() ? " or " : ", ";
    listed += c;
    ++k;
  }
  throw std::invalid_argument(flag + " must be " + listed + ", not '" + value + "'");
}

void check_and_complete(Options& o);
}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // Flags without a value.
    static constexpr std::pair<const char*, bool Options::*> switches[] = {
        {"-h", &Options::help},
        {"--help", &Options::help},
        {"--verify", &Options::verify},
        {"--sync", &Options::sync},
        {"--baseline", &Options::baseline},
        {"--graphs", &Options::graphs},
        {"--overlap", &Options::overlap}};
    const auto* on = std::find_if(std::begin(switches), std::end(switches),
                                  [&](const auto& sw) { return a == sw.first; });
    if (on != std::end(switches)) {
      o.*(on->second) = true;
      continue;
    }
    if (a == "--fusion") {
      o.fusion = parse_fusion(parse_choice(args, i, {"none", "A", "B", "C"}));
      continue;
    }
    if (a == "--comm") {
      o.comm = parse_choice(args, i, {"device", "host"});
      continue;
    }
    if (a == "--waits") {
      o.device_waits = parse_choice(args, i, {"device", "host"}) == "device";
      o.waits_given = true;
      continue;
    }
    if (a == "--path") {
      o.path = parse_choice(args, i, {"rank", "unit", "task"});
      continue;
    }
    if (a == "--checkpoint-dir" || a == "--restart" || a == "--lb-data") {
      if (i + 1 >= args.size() || args[i + 1].empty())
        throw std::invalid_argument(a + " needs a directory");
      (a == "--restart"   ? o.restart_dir
       : a == "--lb-data" ? o.lb_data_dir
                          : o.checkpoint_dir) = args[++i];
      continue;
    }
    if (a == "--batches") {
      const std::string b = parse_choice(args, i, {"none", "faces", "all"});
      o.batches = b == "none" ? Batches::none : b == "faces" ? Batches::faces : Batches::all;
      o.batches_given = true;
      continue;
    }
    if (a == "--load") {
      o.measured_load = parse_choice(args, i, {"stated", "measured"}) == "measured";
      continue;
    }
    if (a == "--balancer") {
      o.balancer = parse_choice(args, i, {"greedy", "refine", "rotate"});
      continue;
    }
    std::int64_t* target = nullptr;
    std::int64_t min = 1;
    if (a == "-x")
      target = &o.x;
    else if (a == "-y")
      target = &o.y;
    else if (a == "-z")
      target = &o.z;
    else if (a == "-i")
      target = &o.iterations, min = 0;
    else if (a == "-w")
      target = &o.warmup, min = 0;
    else if (a == "--odf")
      target = &o.odf;
    else if (a == "--checkpoint-every")
      target = &o.checkpoint_every;
    else if (a == "--balance-every")
      target = &o.balance_every;
    else if (a == "--imbalance")
      target = &o.imbalance;
    else
      throw std::invalid_argument("unknown option '" + a + "'");
    if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
    *target = parse_integer(a, args[++i], min);
  }
  check_and_complete(o);
  return o;
}

namespace {
// The limits of each value and the combinations of options that go together; the path
// where none was chosen.
void check_and_complete(Options& o) {
  if (o.imbalance > 64) throw std::invalid_argument("--imbalance takes 1 to 64");
  // Products that overflow, or grids no machine holds, are errors here, not crashes later.
  // (x + 2)(y + 2)(z + 2) <= kMostPoints, by divisions that cannot overflow.
  const auto nx = static_cast<std::uint64_t>(o.x) + 2, ny = static_cast<std::uint64_t>(o.y) + 2,
             nz = static_cast<std::uint64_t>(o.z) + 2;
  if (nx > kMostPoints / ny || nx * ny > kMostPoints / nz)
    throw std::invalid_argument("-x, -y, -z: a grid of " + std::to_string(o.x) + " x " +
                                std::to_string(o.y) + " x " + std::to_string(o.z) +
                                " points (with its boundary) is more than 2^50 points");
  if (o.warmup > kMostUpdates - o.iterations)
    throw std::invalid_argument("-w and -i: at most 2^62 updates in all");
  if (o.odf > kodo::kMostOdfUnits)
    throw std::invalid_argument("--odf must be at most 2^30, not " + std::to_string(o.odf));
  if (!o.lb_data_dir.empty() && o.balance_every == 0)
    throw std::invalid_argument("--lb-data records balance points: it needs --balance-every");
  if (o.baseline && (o.balance_every > 0 || o.imbalance > 1))
    throw std::invalid_argument(
        "--baseline is one block per rank: it takes neither --balance-every nor --imbalance");
  if ((o.checkpoint_every > 0) != !o.checkpoint_dir.empty())
    throw std::invalid_argument("--checkpoint-every and --checkpoint-dir go together");
  const bool unit_flags = o.graphs || o.sync || o.waits_given;
  if (o.path == "rank" && unit_flags)
    throw std::invalid_argument(
        "--graphs, --sync and --waits are of --path unit (the rank program records each "
        "iteration of a rank's blocks as one device graph itself)");
  if (o.path == "task" && (unit_flags || o.fusion != Fusion::none))
    throw std::invalid_argument(
        "--path task runs the unit path's iteration as a coroutine: it takes neither "
        "--graphs, --sync, --waits nor a --fusion other than none");
  if (o.baseline && !o.path.empty())
    throw std::invalid_argument("--baseline is its own method: it takes no --path");
  if (o.path.empty() && !o.baseline) o.path = unit_flags ? "unit" : "rank";
  if (o.batches_given && !(o.path == "task" || (o.path == "unit" && o.fusion == Fusion::none &&
                                                !o.graphs && !o.sync && !o.waits_given)))
    throw std::invalid_argument(
        "--batches chooses the launches of --path task, or of --path unit with fusion none and "
        "neither --graphs, --sync nor --waits");
  if (o.measured_load && o.path != "task")
    throw std::invalid_argument(
        "--load measured times the resumes of each block's task: it needs --path task (the "
        "unit path launches its updates from completions, which are not timed; the rank "
        "program runs a rank's blocks as one device program)");
}
}  // namespace

std::string usage() {
  return "usage: jacobi3d [-x N] [-y N] [-z N] [-i ITERATIONS] [-w WARMUP] [--odf UNITS_PER_RANK]\n"
         "                [--path rank|unit|task] [--comm device|host] [--fusion none|A|B|C]\n"
         "                [--graphs] [--overlap]\n"
         "                [--waits device|host] [--verify] [--sync] [--baseline] [--help]\n"
         "                [--checkpoint-every N --checkpoint-dir DIR] [--restart DIR]\n"
         "                [--imbalance F] [--balance-every N] [--balancer greedy|refine|rotate]\n"
         "                [--load stated|measured] [--lb-data DIR] [--batches none|faces|all]\n"
         "  -x, -y, -z   global grid size (default 64 each)\n"
         "  -i           timed iterations (default 100)\n"
         "  -w           warm-up iterations before timing (default 10)\n"
         "  --odf        overdecomposition factor: work units per rank (default 1)\n"
         "  --verify     compare the checksum with a serial reference run on rank 0\n"
         "  --path       rank (default): the iterations of a rank's blocks run as one device\n"
         "               program, a graph launched once per iteration holding every block's\n"
         "               kernels and the faces between them (kodo::StepProgram); unit: each\n"
         "               block runs its own iterations (entry methods, channels, completion\n"
         "               engine), the path --graphs, --sync and --waits choose; task: the\n"
         "               unit path (fusion none) with each block's iterations a loop in a\n"
         "               coroutine (kodo::Task) that awaits its faces\n"
         "  --batches    --path task, and --path unit with fusion none (no --graphs, --sync\n"
         "               or --waits): which kernels a block launches with the rank's other\n"
         "               blocks' as one (kodo::KernelBatch): all (default: packs, unpacks and\n"
         "               the update), faces (packs and unpacks; with --overlap, as all) or none\n"
         "  --comm       halo transfers: device (GPU-aware, default) or host (staged through\n"
         "               pinned host memory); units of one rank always use device copies\n"
         "  --fusion     face kernels per unit and iteration: none (a pack and an unpack per\n"
         "               face), A (all packs in one kernel), B (all packs in one, all unpacks\n"
         "               in one once every face is in), C (unpack, update and pack in one kernel)\n"
         "  --graphs     launch each unit iteration (unpacks, update, packs) as one graph,\n"
         "               built once per parity and replayed\n"
         "  --overlap    split each unit's update: the points next to a neighbour's face\n"
         "               after its faces arrive (reading them from the receive buffers,\n"
         "               writing the next faces to the send buffers), the rest while they\n"
         "               travel; every path; takes neither --fusion nor --graphs\n"
         "  --waits      with --fusion C, --graphs or --overlap, where a unit waits for its\n"
         "               neighbours' faces: device (default: its compute stream waits for\n"
         "               them on the device, queued ahead, where every face comes by the\n"
         "               same-node route and the unit has a compute stream of its own; the\n"
         "               host hands faces over elsewhere) or host (always)\n"
         "  --sync       wait for device work by fencing streams (default: completion engine)\n"
         "  --baseline   run the bulk-synchronous MPI version instead (one block per rank,\n"
         "               fence, host-staged MPI exchange, wait; for comparison; --odf 1)\n"
         "  --checkpoint-every, --checkpoint-dir\n"
         "               write a checkpoint of every block into DIR after every N-th update\n"
         "               (counted from the start of the computation, warm-up included); DIR\n"
         "               keeps the latest complete one\n"
         "  --restart    continue from the latest checkpoint in DIR, on any rank count and\n"
         "               ODF: the run ends at update -w + -i, as a run without restart would\n"
         "               (updates the checkpoint holds are not repeated, warm-up included)\n"
         "  --imbalance  blocks whose first point lies in the lower half of the grid in x do\n"
         "               F times the work of the others (the update again, into scratch;\n"
         "               F in 1..64, default 1); with --load stated every block states its\n"
         "               cells times F as its load\n"
         "  --balance-every\n"
         "               after every N-th update (counted as --checkpoint-every counts), move\n"
         "               blocks between ranks with the balancer when it is worth it (0, the\n"
         "               default: never); with --path task inside run(), at a balance\n"
         "               point the blocks' tasks await\n"
         "  --balancer   refine (default: few moves), greedy (the heaviest block first onto\n"
         "               the least loaded rank) or rotate (every block to the next rank at\n"
         "               every balance point: for tests)\n"
         "  --load       what the balancers weigh: stated (default: each block's points\n"
         "               times its work factor) or measured (the device time of each\n"
         "               block's work on its compute stream, the host time on the host\n"
         "               backend; --path task)\n"
         "  --lb-data    write each balance point's loads and placements to DIR as DARMA\n"
         "               vt's LB data (data.RANK.json), which vt-tv and LBAF read\n";
}

}  // namespace jacobi
