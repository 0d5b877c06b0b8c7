#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Sums the stacks host_sampler.cpp recorded, by module and by function.

usage: sampler_report.py STACKS [--within RE] [--without RE] [--top N] [--callers RE]
                         [--stacks RE]

STACKS is a SAMPLER_OUT.PID file (STACKS.maps beside it). Functions are named by addr2line
(symbol tables: stripped libraries give the nearest exported name, not the function).
--within / --without keep the stacks with / without a frame matching RE (e.g. --within
'Scheduler::run' for a rank's loop). Prints the share of stacks by module and function of
the first frame (self) and of every frame (inclusive); --callers RE the three frames
above the outermost of a run of frames matching RE (who calls malloc, say); --stacks RE
the five first frames of the stacks whose first frame matches RE.
"""
import bisect
import collections
import os
import re
import subprocess
import sys


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def main(args):
    path = args[0]
    within = option(args, '--within')
    without = option(args, '--without')
    callers = option(args, '--callers')
    stacks_of = option(args, '--stacks')
    top = int(option(args, '--top', 40))

    maps, bases = [], {}
    for line in open(path + '.maps'):
        parts = line.split()
        if len(parts) < 6:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split('-'))
        if int(parts[2], 16) == 0 and parts[5] not in bases:
            bases[parts[5]] = lo
        maps.append((lo, hi, parts[5]))
    maps.sort()
    starts = [m[0] for m in maps]

    def module(a):
        i = bisect.bisect_right(starts, a) - 1
        return maps[i][2] if i >= 0 and maps[i][0] <= a < maps[i][1] else None

    lines = open(path).read().split('\n')
    head = lines[0].split() if lines and lines[0].startswith('# host_sampler') else []
    mode = head[2] if len(head) > 2 else 'time'
    sampler = os.path.basename(head[3]) if len(head) > 3 else 'host_sampler'
    stacks = []
    for line in lines:
        if line.startswith('#'):
            continue
        pcs = [int(x, 16) for x in line.split()]
        while pcs and os.path.basename(module(pcs[0]) or '') == sampler:
            pcs.pop(0)  # the sampler's own frames
        if mode == 'time' and pcs:
            pcs.pop(0)  # the signal's return trampoline
        if pcs:
            stacks.append(pcs)

    # Return addresses point after their call: look up the byte before (the first frame of
    # a time sample is the interrupted instruction itself).
    def lookup(depth, a):
        return a if depth == 0 and mode == 'time' else a - 1

    wanted = collections.defaultdict(set)
    for pcs in stacks:
        for d, a in enumerate(pcs):
            q = lookup(d, a)
            m = module(q)
            if m and m.startswith('/'):
                wanted[m].add(q - bases.get(m, 0))
    names = {}
    for m, offsets in wanted.items():
        offsets = sorted(offsets)
        try:
            out = subprocess.run(['addr2line', '-f', '-C', '-e', m] + [hex(o) for o in offsets],
                                 capture_output=True, text=True, timeout=600).stdout.split('\n')
        except (OSError, subprocess.SubprocessError):
            out = []
        for k, o in enumerate(offsets):
            fn = out[2 * k] if 2 * k < len(out) else '??'
            names[(m, o)] = fn if fn != '??' else '?? ' + os.path.basename(m)

    def name(d, a):
        q = lookup(d, a)
        m = module(q)
        if not m or not m.startswith('/'):
            return '?? ' + (m or 'unmapped')
        return names.get((m, q - bases.get(m, 0)), '?? ' + os.path.basename(m))

    def short(fn, n=150):
        return (re.sub(r'\(.*', '', fn) if len(fn) > n else fn)[:n]

    chosen = []
    for pcs in stacks:
        fns = [name(d, a) for d, a in enumerate(pcs)]
        if within and not any(re.search(within, f) for f in fns):
            continue
        if without and any(re.search(without, f) for f in fns):
            continue
        chosen.append((pcs, fns))
    n = max(1, len(chosen))
    print(f'{len(chosen)} of {len(stacks)} stacks ({mode})' + (f' within /{within}/' if within else ''))
    by_module, by_self, inclusive = collections.Counter(), collections.Counter(), collections.Counter()
    for pcs, fns in chosen:
        by_module[os.path.basename(module(lookup(0, pcs[0])) or '?')] += 1
        by_self[short(fns[0])] += 1
        for f in set(short(f) for f in fns):
            inclusive[f] += 1
    for title, counter, count in (('self, by module', by_module, 15), ('self, by function', by_self, top),
                                  ('inclusive', inclusive, 2 * top)):
        print(f'\n== {title}')
        for k, c in counter.most_common(count):
            print(f'{100 * c / n:6.1f}%  {k}')
    if callers:
        chains, hit = collections.Counter(), 0
        for _, fns in chosen:
            for d, f in enumerate(fns):
                if re.search(callers, f):
                    while d + 1 < len(fns) and re.search(callers, fns[d + 1]):
                        d += 1
                    chains[' <- '.join(short(x, 70) for x in fns[d + 1:d + 4])] += 1
                    hit += 1
                    break
        print(f'\n== callers of /{callers}/: {100 * hit / n:.1f}% of stacks')
        for k, c in chains.most_common(top):
            print(f'{100 * c / n:6.1f}%  {k}')
    if stacks_of:
        found = collections.Counter(' <- '.join(short(f, 60) for f in fns[:5])
                                    for _, fns in chosen if re.search(stacks_of, fns[0]))
        print(f'\n== stacks whose first frame matches /{stacks_of}/')
        for k, c in found.most_common(top):
            print(f'{c:8d}  {k}')


if __name__ == '__main__':
    if len(sys.argv) < 2 or sys.argv[1] in ('-h', '--help'):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    main(sys.argv[1:])
