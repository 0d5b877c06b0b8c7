// SPDX-FileCopyrightText: 2026 The kodo developers
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "options.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace minimd {
namespace {

std::int64_t parse_integer(const std::string& what, const std::string& text, std::int64_t min) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty())
    throw std::invalid_argument(what + " needs an integer, not '" + text + "'");
  if (v < min)
    throw std::invalid_argument(what + " must be at least " + std::to_string(min) + ", not " +
                                text);
  return v;
}

double parse_real(const std::string& what, const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty() || !std::isfinite(v))
    throw std::invalid_argument(what + " needs a number, not '" + text + "'");
  return v;
}

bool parse_switch(const std::string& flag, const std::string& text) {
  if (text == "0") return false;
  if (text == "1") return true;
  throw std::invalid_argument(flag + " must be 0 or 1, not '" + text + "'");
}

// Checks that hold whatever the values came from.
void check(const Problem& p) {
  auto positive = [](const char* what, double v) {
    if (!(v > 0)) throw std::invalid_argument(std::string(what) + " must be positive");
  };
  positive("the time step", p.dt);
  positive("the density", p.density);
  positive("the force cutoff", p.force_cutoff);
  positive("the initial temperature", p.temperature);
  positive("epsilon", p.epsilon);
  positive("sigma", p.sigma);
  if (p.skin < 0) throw std::invalid_argument("the neighbour skin must not be negative");
  if (p.reneighbor_every < 1)
    throw std::invalid_argument("reneighboring must happen every 1 or more steps");
  if (p.thermo_every < 0) throw std::invalid_argument("the thermo frequency must not be negative");
  (void)p.atoms();
}

}  // namespace

std::int64_t Problem::atoms() const {
  const auto max = std::numeric_limits<std::int64_t>::max();
  if (nx < 1 || ny < 1 || nz < 1)
    throw std::invalid_argument("the box needs at least one unit cell per dimension");
  if (nx > max / 4 / ny / nz)
    throw std::invalid_argument("4 x " + std::to_string(nx) + " x " + std::to_string(ny) + " x " +
                                std::to_string(nz) + " atoms do not fit in 64 bits");
  return 4 * nx * ny * nz;
}

void read_input_file(const std::string& path, Problem& problem) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot open the input file '" + path + "'");
  // The first line is a title; then one value line per setting, in this order, each
  // holding its value(s) first and a description after. Blank lines are skipped.
  std::string line;
  int number = 0;
  auto next = [&](const char* what) {
    while (std::getline(in, line)) {
      ++number;
      if (line.find_first_not_of(" \t\r") != std::string::npos) return;
    }
    throw std::invalid_argument(path + ": ends before the " + std::string(what) + " line");
  };
  auto where = [&] { return path + " line " + std::to_string(number); };
  auto words = [&](const char* what, int count) {
    next(what);
    std::istringstream s(line);
    std::vector<std::string> w(count);
    for (auto& x : w)
      if (!(s >> x))
        throw std::invalid_argument(where() + ": the " + std::string(what) + " line needs " +
                                    std::to_string(count) + " value(s)");
    return w;
  };
  if (!std::getline(in, line)) throw std::invalid_argument(path + ": the file is empty");
  ++number;
  const auto units = words("units", 1)[0];
  if (units != "lj")
    throw std::invalid_argument(where() + ": minimd supports lj units only, not '" + units + "'");
  const auto data = words("data file", 1)[0];
  if (data != "none")
    throw std::invalid_argument(
        where() + ": minimd builds its own lattice: the data file must be none, not '" + data +
        "'");
  const auto style = words("force style", 1)[0];
  if (style != "lj")
    throw std::invalid_argument(where() + ": minimd supports the lj force style only, not '" +
                                style + "'");
  auto real = [&](const std::string& w, const char* what) {
    return parse_real(where() + ": " + what, w);
  };
  auto integer = [&](const std::string& w, const char* what, std::int64_t min) {
    return parse_integer(where() + ": " + what, w, min);
  };
  auto lj = words("LJ parameters", 2);
  problem.epsilon = real(lj[0], "epsilon");
  problem.sigma = real(lj[1], "sigma");
  auto size = words("problem size", 3);
  problem.nx = integer(size[0], "nx", 1);
  problem.ny = integer(size[1], "ny", 1);
  problem.nz = integer(size[2], "nz", 1);
  problem.steps = integer(words("timesteps", 1)[0], "timesteps", 0);
  problem.dt = real(words("timestep size", 1)[0], "the timestep size");
  problem.temperature = real(words("initial temperature", 1)[0], "the initial temperature");
  problem.density = real(words("density", 1)[0], "the density");
  problem.reneighbor_every = integer(words("reneighboring", 1)[0], "reneighboring every", 1);
  auto cut = words("cutoff and skin", 2);
  problem.force_cutoff = real(cut[0], "the force cutoff");
  problem.skin = real(cut[1], "the neighbour skin");
  problem.thermo_every = integer(words("thermo", 1)[0], "the thermo frequency", 0);
  try {
    check(problem);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

namespace {
// The options that go together, or not, once all are read.
void check_together(const Options& o) {
  check(o.problem);
  if (o.step_program == 1 && (o.half_neighbor || o.sync))
    throw std::invalid_argument(
        "--step-program 1 runs full lists (--half_neigh 0) without --sync: its steps have no "
        "reverse communication of forces, and no stage to fence");
  if (o.reneighbor_program == 1 && o.step_program == 0)
    throw std::invalid_argument(
        "--reneighbor-program 1 goes with the step program (not "
        "--step-program 0)");
  if (!o.restart_dir.empty() && (o.drift[0] != 0 || o.drift[1] != 0 || o.drift[2] != 0))
    throw std::invalid_argument(
        "--drift applies at the start; a restart goes on with the saved velocities");
  if ((o.checkpoint_every > 0) != !o.checkpoint_dir.empty())
    throw std::invalid_argument("--checkpoint-every and --checkpoint-dir go together");
  // A restart rebuilds the lists, as the run without one does at these steps only.
  if (o.checkpoint_every % o.problem.reneighbor_every != 0)
    throw std::invalid_argument(
        text("--checkpoint-every must be a multiple of the neighbour "
             "frequency (",
             o.problem.reneighbor_every, "), so a restart continues as the run would have"));
  // Units move between steps that rebuilt the lists, as a restart resumes.
  if (o.balance_every % o.problem.reneighbor_every != 0)
    throw std::invalid_argument(
        text("--balance-every must be a multiple of the neighbour frequency (",
             o.problem.reneighbor_every, "): units move where the lists are rebuilt"));
  if (o.problem.slab < 1 && !o.reference.empty())
    throw std::invalid_argument(
        "--reference compares with miniMD's full box: a slab (--slab) is another system");
  if (!o.lb_data_dir.empty() && o.balance_every == 0)
    throw std::invalid_argument("--lb-data records balance points: it needs --balance-every");
}
}  // namespace

Options parse_options(const std::vector<std::string>& args, bool gpu_backend) {
  Options o;
  o.half_neighbor = !gpu_backend;
  auto value = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
    return args[++i];
  };
  // The input file first: flags override it wherever they stand.
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i] == "-i" || args[i] == "--input_file") {
      o.input_file = value(i);
      read_input_file(o.input_file, o.problem);
    }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "-i" || a == "--input_file") {
      ++i;  // read above
    } else if (a == "-s" || a == "--size") {
      const auto n = parse_integer(a, value(i), 1);
      o.problem.nx = o.problem.ny = o.problem.nz = n;
    } else if (a == "-nx" || a == "--nx") {
      o.problem.nx = parse_integer(a, value(i), 1);
    } else if (a == "-ny" || a == "--ny") {
      o.problem.ny = parse_integer(a, value(i), 1);
    } else if (a == "-nz" || a == "--nz") {
      o.problem.nz = parse_integer(a, value(i), 1);
    } else if (a == "-n" || a == "--nsteps") {
      o.problem.steps = parse_integer(a, value(i), 0);
    } else if (a == "--half_neigh") {
      o.half_neighbor = parse_switch(a, value(i));
      o.half_neighbor_given = true;
    } else if (a == "-gn" || a == "--ghost_newton") {
      o.ghost_newton = parse_switch(a, value(i));
    } else if (a == "-b" || a == "--neigh_bins") {
      o.bins = parse_integer(a, value(i), 1);
    } else if (a == "--odf") {
      o.odf = parse_integer(a, value(i), 1);
    } else if (a == "--comm") {
      o.comm = value(i);
      if (o.comm != "device" && o.comm != "host")
        throw std::invalid_argument("--comm must be device or host, not '" + o.comm + "'");
    } else if (a == "--sync") {
      o.sync = true;
    } else if (a == "--step-program") {
      o.step_program = parse_switch(a, value(i)) ? 1 : 0;
    } else if (a == "--reneighbor-program") {
      o.reneighbor_program = parse_switch(a, value(i)) ? 1 : 0;
    } else if (a == "--drift") {
      for (int d = 0; d < 3; ++d) o.drift[d] = parse_real("--drift", value(i));
    } else if (a == "--reference") {
      o.reference = value(i);
    } else if (a == "--checkpoint-every") {
      o.checkpoint_every = parse_integer(a, value(i), 1);
    } else if (a == "--checkpoint-dir" || a == "--restart" || a == "--lb-data") {
      const std::string& dir = value(i);
      if (dir.empty()) throw std::invalid_argument(a + " needs a directory");
      (a == "--restart"   ? o.restart_dir
       : a == "--lb-data" ? o.lb_data_dir
                          : o.checkpoint_dir) = dir;
    } else if (a == "--slab") {
      const std::string given = value(i);
      o.problem.slab = parse_real(a, given);
      if (!(o.problem.slab > 0 && o.problem.slab <= 1))
        throw std::invalid_argument("--slab takes a fraction of the box in (0, 1], not " + given);
    } else if (a == "--balance-every") {
      o.balance_every = parse_integer(a, value(i), 1);
    } else if (a == "--balancer") {
      o.balancer = value(i);
      if (o.balancer != "greedy" && o.balancer != "refine" && o.balancer != "rotate")
        throw std::invalid_argument("--balancer must be greedy, refine or rotate, not '" +
                                    o.balancer + "'");
    } else {
      throw std::invalid_argument("unknown option '" + a + "'");
    }
  }
  check_together(o);
  return o;
}

std::string usage() {
  return "usage: minimd [-i FILE] [-s N | -nx N -ny N -nz N] [-n STEPS] [--half_neigh 0|1]\n"
         "              [-gn 0|1] [-b BINS] [--odf UNITS_PER_RANK] [--comm device|host] [--sync]\n"
         "              [--step-program 0|1] [--reneighbor-program 0|1] [--reference LOG]\n"
         "              [--drift VX VY VZ] [--help]\n"
         "              [--checkpoint-every N --checkpoint-dir DIR] [--restart DIR]\n"
         "              [--slab F] [--balance-every N] [--balancer greedy|refine|rotate]\n"
         "              [--lb-data DIR]\n"
         "Lennard-Jones molecular dynamics (Mantevo miniMD's problem) on overdecomposed units.\n"
         "  -i FILE        input file in the in.lj.miniMD format (default: that file's values)\n"
         "  -s N           N x N x N FCC unit cells, 4 atoms each (sets -nx, -ny and -nz)\n"
         "  -nx/-ny/-nz N  unit cells along one dimension\n"
         "  -n STEPS       time steps\n"
         "  --half_neigh   1: half neighbour lists, 0: full lists (default: 0 on GPU backends,\n"
         "                 where full lists need no atomics and run about 2x faster; 1 on\n"
         "                 host backends, miniMD's default)\n"
         "  -gn            with half lists, 1: Newton's third law across units too (forces on\n"
         "                 ghost atoms go back to their owners; default), 0: not\n"
         "  -b BINS        neighbour bins per dimension of the box (default: bins about half\n"
         "                 the neighbour cutoff wide)\n"
         "  --odf          overdecomposition factor: work units per rank (default 1)\n"
         "  --comm         transfers between ranks: device (GPU-aware, default) or host\n"
         "                 (staged through pinned host memory)\n"
         "  --sync         wait for device work by fencing streams (default: completion engine)\n"
         "  --step-program 1: with full lists and without --sync, the steps that do not\n"
         "                 rebuild the lists run as one device program per rank (a thermo\n"
         "                 step's sums taken after it); 0: every step unit by unit\n"
         "                 (default: 1 with --odf > 1)\n"
         "  --reneighbor-program 1: with the step program, the steps that rebuild the\n"
         "                 lists run as a second device program per rank,\n"
         "                 their counts kept on the device (a step whose counts outgrow the\n"
         "                 room kept for them runs again unit by unit); 0: unit by unit\n"
         "                 (default: 1 where the step program runs)\n"
         "  --reference    compare the thermo lines with a miniMD log (e.g. the shared 4k.lj):\n"
         "                 every step both print must agree to the last printed digit\n"
         "  --drift        add a uniform velocity to every atom at the start: the box moves\n"
         "                 as a whole, atoms change units all the time, and the thermo (in\n"
         "                 the frame of the centre of mass) is that of the box at rest\n"
         "  --checkpoint-every, --checkpoint-dir\n"
         "                 write a checkpoint of every unit into DIR after every N-th step\n"
         "                 (a multiple of the neighbour frequency); DIR keeps the latest one\n"
         "  --restart      continue from the latest checkpoint in DIR, on any rank count and\n"
         "                 ODF, up to step -n (the same physical problem; its thermo from\n"
         "                 the checkpoint's step on)\n"
         "  --slab F       atoms only in the lower fraction F of the box in x (0 < F <= 1,\n"
         "                 default 1): a liquid slab in vacuum, units in the vacuum hold none\n"
         "  --balance-every\n"
         "                 after every N-th step (a multiple of the neighbour frequency), move\n"
         "                 units between ranks with the balancer when it is worth it; each\n"
         "                 unit's load is its atoms (0, the default: never)\n"
         "  --balancer     refine (default: few moves), greedy (the heaviest unit first onto\n"
         "                 the least loaded rank) or rotate (every unit to the next rank at\n"
         "                 every balance point: for tests)\n"
         "  --lb-data      write each balance point's loads and placements to DIR as DARMA\n"
         "                 vt's LB data (data.RANK.json), which vt-tv and LBAF read\n";
}

}  // namespace minimd
