#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Checkpoints and restarts across rank counts, bad checkpoints, and a rank killed while
# writing one.
#   test/checkpoint_test.sh CASE CHECKPOINT_PROGRAM JACOBI3D MINIMD MINIMD_REFERENCE WORKDIR
#                           NUMPROC_FLAG LAUNCHER...
# CASE: program (every kind of state field, restored on 1 to 4 ranks), jacobi (restarts on
# another rank count and ODF give the uninterrupted run's checksum), minimd (restarts give
# miniMD's thermo), bad (missing, truncated, corrupted, forged and incompatible
# checkpoints, malformed indexes of the rank files), links (planted links and oversized
# files), kill, or kill-moving (a rank killed while units move).
set -uo pipefail
case=$1 program=$2 jacobi=$3 minimd=$4 reference=$5 work=$6 np=$7
shift 7
launch=("$@")
rm -rf "$work" && mkdir -p "$work"
# A run's standard output and error, apart: the launcher forwards the two streams
# separately, and a line of one can land inside a line of the other.
out="$work/out.txt" err="$work/err.txt"

fail() {
  echo "checkpoint_test ($case): $*"
  echo "--- last output:"
  cat "$out"
  echo "--- its standard error:"
  cat "$err"
  exit 1
}
# has TEXT: whether the last run's output or error holds TEXT.
has() { grep -qF -- "$1" "$out" || grep -qF -- "$1" "$err"; }
# run RANKS PROGRAM ARGS...: must exit 0.
run() {
  local ranks=$1
  shift
  echo "+ $ranks rank(s): $*" >"$out"
  timeout 120 "${launch[@]}" "$np" "$ranks" "$@" >>"$out" 2>"$err" || fail "exit status $? from: $*"
}
# fails TEXT RANKS PROGRAM ARGS...: must exit non-zero, saying TEXT.
fails() {
  local text=$1 ranks=$2
  shift 2
  echo "+ $ranks rank(s): $*" >"$out"
  timeout 120 "${launch[@]}" "$np" "$ranks" "$@" >>"$out" 2>"$err"
  local status=$?
  # A hang (timeout's 124) is not the failure expected.
  [[ $status != 0 && $status != 124 ]] || fail "exit status $status from: $*"
  [[ $status != 137 || $text == "signal 9" ]] || fail "killed (status 137): $*" 
  has "$text" || fail "no '$text' in the output of: $*"
}
expect() { has "$1" || fail "no '$1' in the output"; }
checksum() { grep '^checksum:' "$out" || fail "no checksum"; }
# line_of MANIFEST AWK_CONDITION: the number of the first line of MANIFEST that matches.
line_of() { awk "$2 { print NR; exit }" "$1"; }
# forge_line DIR CONDITION AWK_PRINT: line CONDITION of DIR's latest manifest replaced by
# what AWK_PRINT prints of it (the checksum in DIR/latest updated).
forge_line() {
  local manifest
  manifest="$1/$(cut -d' ' -f1 "$1/latest")/manifest"
  local n text
  n=$(line_of "$manifest" "$2")
  [[ -n $n ]] || fail "no line ($2) in $manifest"
  text=$(awk "NR == $n { $3 }" "$manifest")
  "$program" forge "$1" "$n" "$text" || fail "forge"
}

grid=(-x 24 -y 20 -z 18)
case $case in
  program)
    # Directories of another program's, named alike, are left alone.
    mkdir -p "$work/p/checkpoint-1" "$work/p/checkpoint-0.partial"
    run 2 "$program" write "$work/p" 3
    listing=$(cd "$work/p" && ls | tr '\n' ' ')
    [[ $listing == "checkpoint-0.partial checkpoint-1 checkpoint-4 latest " ]] ||
      fail "the directory holds: $listing"
    for ranks in 1 2 3 4; do
      run "$ranks" "$program" read "$work/p"
      expect "restored 7 units at step 3"
    done
    # A file per rank (not per unit), its units found by the manifest on any rank count.
    run 4 "$program" write "$work/p4" 2
    files=$(cd "$work/p4/checkpoint-1" && LC_ALL=C ls | tr '\n' ' ')
    [[ $files == "XXH3SUMS kodo-checkpoint manifest rank-0.state rank-1.state rank-2.state rank-3.state " ]] ||
      fail "the checkpoint holds: $files"
    for ranks in 1 2 3 4; do
      run "$ranks" "$program" read "$work/p4"
      expect "restored 7 units at step 2"
    done
    # Every checksum is xxHash's XXH3-64 (what xxhsum -H3 prints), XXH3SUMS in its format.
    "$program" verify-xxh3 "$work/p4" >"$out" 2>"$err" || fail "verify-xxh3"
    expect "xxh3: 5 files and 7 units match XXH3_64bits"
    # ... and the stock tool agrees, where CMake found it (XXHSUM; in kodo's environment).
    if [[ -n ${XXHSUM:-} ]]; then
      (cd "$work/p4/checkpoint-1" && "$XXHSUM" -c XXH3SUMS) >"$out" 2>"$err" || fail "xxhsum -c"
      read -r _ named <"$work/p4/latest"
      stock=$(cd "$work/p4/checkpoint-1" && "$XXHSUM" -H3 manifest)
      [[ ${stock%% *} == "$named" ]] ||
        fail "latest names the manifest's checksum $named, xxhsum -H3 prints $stock"
    else
      echo "checkpoint_test: no xxhsum: the checksums are checked by the library only"
    fi
    # The unit type is recorded by the name the type gives (Cell::checkpoint_name); a
    # checkpoint that names it by its typeid name (as written before it had one) reads
    # too, one of another type does not, and a name that is not one word is refused.
    manifest="$work/p/$(cut -d' ' -f1 "$work/p/latest")/manifest"
    [[ $(awk '$1 == "collection" { print $NF }' "$manifest") == checkpoint_program::Cell ]] ||
      fail "the collection line names no checkpoint_program::Cell: $(grep '^collection' "$manifest")"
    mangled=$("$program" typeid-name) || fail "typeid-name"
    forge_line "$work/p" '$1 == "collection"' "\$NF = \"$mangled\"; print"
    run 2 "$program" read "$work/p"
    expect "restored 7 units at step 3"
    forge_line "$work/p" '$1 == "collection"' '$NF = "other::Cell"; print'
    fails "holds collection 0 with units of type 'other::Cell', not checkpoint_program::Cell" \
      2 "$program" read "$work/p"
    fails "a unit type's checkpoint_name must be 1 to 200 printable characters without spaces, not 'two words'" \
      2 "$program" write-badly-named "$work/bad-name"
    ;;
  jacobi)
    for warmup in 0 5; do
      dir="$work/j$warmup"
      run 2 "$jacobi" "${grid[@]}" -i $((40 - warmup)) -w "$warmup" --odf 2
      whole=$(checksum)
      run 2 "$jacobi" "${grid[@]}" -i $((20 - warmup)) -w "$warmup" --odf 2 \
        --checkpoint-every 7 --checkpoint-dir "$dir"
      expect "checkpoint at update 14"
      [[ $(checksum) != "$whole" ]] || fail "the checkpointed run did not stop early"
      # The same unit grid (2 x 2 and 4 x 1), then others; the last two with fused
      # kernels and with overlap.
      for shape in "2 2" "4 1" "1 1" "3 2" "1 8" "2 3 --fusion C" "3 1 --overlap" "2 2 --graphs" \
        "2 1 --comm host"; do
        read -r ranks odf extra <<<"$shape"
        # shellcheck disable=SC2086
        run "$ranks" "$jacobi" "${grid[@]}" -i $((40 - warmup)) -w "$warmup" --odf "$odf" \
          --restart "$dir" $extra
        expect "restarted from $dir/checkpoint-1 at update 14"
        [[ $(checksum) == "$whole" ]] || fail "restarted on $ranks rank(s), ODF $odf: $(checksum), not $whole"
      done
    done
    # A restart at the last update runs none; a chain of restarts writes into the
    # directory it restarted from.
    dir="$work/j0"
    run 1 "$jacobi" "${grid[@]}" -i 14 -w 0
    at14=$(checksum)
    run 3 "$jacobi" "${grid[@]}" -i 14 -w 0 --restart "$dir"
    [[ $(checksum) == "$at14" ]] || fail "a restart at the last update changed the field"
    grep -q '^residual' "$out" && fail "a residual printed where no update ran"
    run 3 "$jacobi" "${grid[@]}" -i 30 -w 0 --restart "$dir" --checkpoint-every 7 --checkpoint-dir "$dir"
    expect "checkpoint at update 28: $dir/checkpoint-3"
    run 1 "$jacobi" "${grid[@]}" -i 40 -w 0 --odf 3 --restart "$dir"
    expect "restarted from $dir/checkpoint-3 at update 28"
    [[ $(checksum) == "$whole" ]] || fail "a chain of restarts: $(checksum), not $whole"
    # Blocks that moved (kodo::rebalance) write the checkpoint they would have written
    # where they were made, and a restart from it gives the uninterrupted run's checksum.
    dir="$work/jb"
    run 2 "$jacobi" "${grid[@]}" -i 20 -w 0 --odf 3 --imbalance 3 --balance-every 5 \
      --balancer greedy --checkpoint-every 14 --checkpoint-dir "$dir"
    expect "balance at update 5: greedy moved"
    run 3 "$jacobi" "${grid[@]}" -i 40 -w 0 --odf 3 --restart "$dir"
    expect "restarted from $dir/checkpoint-0 at update 14"
    [[ $(checksum) == "$whole" ]] || fail "a restart after blocks moved: $(checksum), not $whole"
    ;;
  minimd)
    # 4000 atoms (the reference's), a checkpoint at step 100 of 200, restarts up to 300 on
    # other rank counts, ODFs and list kinds: miniMD's thermo at 100, 200 and 300.
    run 2 "$minimd" -s 10 -n 200 --checkpoint-every 100 --checkpoint-dir "$work/m" \
      --reference "$reference"
    expect "# checkpoint at step 200: $work/m/checkpoint-1"
    expect "verified: 3 thermo line(s) equal the reference's"
    run 2 "$minimd" -s 10 -n 100 --checkpoint-every 100 --checkpoint-dir "$work/m100"
    for shape in "2 1" "1 1" "3 2" "4 1 --half_neigh 0" "2 2 -gn 0" "2 1 --sync --comm host" \
      "3 2 --half_neigh 0"; do
      read -r ranks odf extra <<<"$shape"
      # shellcheck disable=SC2086
      run "$ranks" "$minimd" -s 10 -n 300 --odf "$odf" --restart "$work/m100" --reference "$reference" $extra
      expect "# Restarted from $work/m100/checkpoint-0 at step 100"
      expect "verified: 3 thermo line(s) equal the reference's"
    done
    # Eight units onto one, written after steps of the step program; a checkpoint at a
    # step with no thermo line (40); a restart at the last step.
    run 4 "$minimd" -s 10 -n 40 --odf 2 --half_neigh 0 --checkpoint-every 40 --checkpoint-dir "$work/m40"
    expect " 38 plain steps in"
    run 1 "$minimd" -s 10 -n 300 --restart "$work/m40" --reference "$reference"
    expect "verified: 3 thermo line(s) equal the reference's"
    grep -q "^40 " "$out" || fail "no thermo line at the restored step"
    run 3 "$minimd" -s 10 -n 200 --restart "$work/m" --reference "$reference"
    expect "verified: 1 thermo line(s) equal the reference's"
    # A saved atom outside its unit's box (x = 1000, checksums made to agree) is refused,
    # not dropped: unit 0's file holds "step" (to byte 56), then "x" (data from byte 95).
    cp -r "$work/m100" "$work/mf"
    "$program" forge-unit "$work/mf" 0 95 0000000000408f40 || fail "forge-unit"
    fails "not a finite atom inside its box" 1 "$minimd" -s 10 -n 300 --restart "$work/mf"
    fails "is not a finite atom inside the unit's box" 2 "$minimd" -s 10 -n 300 --restart "$work/mf"
    fails "--drift applies at the start" 1 "$minimd" -s 10 -n 300 --restart "$work/m" --drift 1 0 0
    fails "--checkpoint-every must be a multiple of the neighbour frequency (20)" 1 "$minimd" -s 10 \
      -n 50 --checkpoint-every 30 --checkpoint-dir "$work/bad"
    fails "is of another problem" 2 "$minimd" -s 9 -n 300 --restart "$work/m"
    fails "is at step 200: not a step of this run (-n 150)" 2 "$minimd" -s 10 -n 150 --restart "$work/m"
    run 1 "$jacobi" -x 24 -y 20 -z 18 -i 10 -w 0 --checkpoint-every 10 --checkpoint-dir "$work/j"
    fails "was written by 'jacobi3d', not minimd" 2 "$minimd" -s 10 -n 300 --restart "$work/j"
    ;;
  bad)
    fails "checkpoint directory $work/none does not exist" 2 "$program" read "$work/none"
    mkdir -p "$work/empty"
    fails "holds no complete checkpoint" 2 "$program" read "$work/empty"
    run 2 "$program" write "$work/b" 1
    unit="$work/b/checkpoint-0/rank-1.state"
    cp "$unit" "$work/saved"
    truncate -s -3 "$unit"
    fails "checkpoint file $unit holds" 3 "$program" read "$work/b"
    expect "(truncated)"
    cp "$work/saved" "$unit"
    printf '\x7f' | dd of="$unit" bs=1 seek=60 conv=notrunc status=none
    fails "does not match its checksum in the manifest (XXH3_" 2 "$program" read-traced "$work/b"
    expect "checkpoint file $unit, unit "
    # ... before that unit's state() reads any of its bytes (a field may size what it
    # allocates: issue 54, a sparse file with a re-checksummed manifest).
    bad=$(grep -ohE "checkpoint file [^ ]*, unit [0-9]+" "$out" "$err" | head -1 | awk '{print $NF}')
    [[ -n $bad ]] || fail "no unit named in the error"
    ! has "the state() of unit $bad runs" || fail "unit $bad's state() ran on bytes that fail their checksum"
    cp "$work/saved" "$unit"
    fails "field 1 is 'step'" 2 "$program" read-renamed "$work/b"
    expect "the unit's state() reads 'steps'"
    fails "was written by 'checkpoint_program', not jacobi3d" 2 "$program" read "$work/b" jacobi3d
    rm "$work/b/checkpoint-0/rank-0.state"
    fails "checkpoint file $work/b/checkpoint-0/rank-0.state is missing" 4 "$program" read "$work/b"
    run 2 "$program" write "$work/b" 1
    sed -i 's/^ranks 2$/ranks 3/' "$work/b/checkpoint-1/manifest"
    fails "manifest does not match its checksum in $work/b/latest" 2 "$program" read "$work/b"
    cp "$work/b/latest" "$work/latest"
    echo "checkpoint-1 xyz" >"$work/b/latest"
    fails "$work/b/latest is not a checkpoint's name" 2 "$program" read "$work/b"
    cp "$work/latest" "$work/b/latest"
    # Another format: a later one, and format 1 (a file per unit, its latest naming the
    # manifest's checksum without "XXH3_"), refused on every rank, naming both.
    "$program" forge "$work/b" 1 "kodo-checkpoint 3" || fail "forge"
    fails "is in format '3'; this kodo (" 2 "$program" read "$work/b"
    expect "reads format 2 only: restart from it with the kodo that wrote it"
    "$program" forge "$work/b" 1 "kodo-checkpoint 1" || fail "forge"
    sed -i 's/ XXH3_/ /' "$work/b/latest"
    fails "checkpoint $work/b/checkpoint-1 is in format '1' (written by kodo '" 3 "$program" read "$work/b"
    expect "reads format 2 only"
    "$program" forge "$work/b" 1 "kodo-checkpoint 2" || fail "forge"
    forge_line "$work/b" '$1 == "collection"' 'print "collection 0 7 1 1 odf 4 type"'
    fails "a malformed collection line" 2 "$program" read "$work/b"
    # The index (the manifest's file and unit lines, checksummed in latest) checked against
    # each file before it is used: offsets past the end, huge sizes, overlapping ranges,
    # gaps, bad checksums, a file not listed, a truncated index.
    for forged in \
      '$1 == "unit":$5 = "99999"; print:extends past the end of rank-' \
      '$1 == "unit":$6 = "4611686018427387904"; print:extends past the end of rank-' \
      '$1 == "unit" && $5 > 0:$5 -= 1; $6 += 1; print:overlaps unit' \
      '$1 == "unit" && $5 > 0:$5 += 1; $6 -= 1; print:do not cover its' \
      '$1 == "unit":$7 = "XXH3_zz"; print:is not an XXH3 checksum' \
      '$1 == "file":$4 = "1234abcd"; print:is not an XXH3 checksum' \
      '$1 == "file" && $2 == 1:print "":lies in rank-1.state, which is not listed before it' \
      '$1 == "unit" && $3 == 3:print "<cut>":is truncated (no '"'"'end'"'"')' \
      '$1 == "end":print "unit 0 7 0 0 0 XXH3_0000000000000000":not a number from 0 to 6'; do
      IFS=: read -r where change says <<<"$forged"
      rm -rf "$work/f" && run 2 "$program" write "$work/f" 1
      forge_line "$work/f" "$where" "$change"
      fails "$says" 2 "$program" read "$work/f"
    done
    # A huge file that its units cover (the index consistent): refused by its real size
    # before anything is read or allocated.
    rm -rf "$work/f" && run 2 "$program" write "$work/f" 1
    manifest="$work/f/checkpoint-0/manifest"
    last=$(awk '$1 == "unit" && $4 == 1 { if ($5 >= at) { at = $5; n = NR } } END { print n }' "$manifest")
    at=$(awk "NR == $last { print \$5 }" "$manifest")
    forge_line "$work/f" "NR == $last" "\$6 = \"$((4611686018427387904 - at))\"; print"
    forge_line "$work/f" '$1 == "file" && $2 == 1' '$3 = "4611686018427387904"; print'
    fails "rank-1.state holds $(stat -c %s "$work/f/checkpoint-0/rank-1.state") bytes where its manifest says 4611686018427387904" \
      2 "$program" read "$work/f"
    # Unit files whose checksums agree with a change: the field checks meet it. Unit 3's
    # file: a 24-byte header, then "step" (a value: name length at 24, kind 32, element
    # size 33, rank 37, bytes 41, data 49), "point" (from 57), "list" (rank at 120, its
    # extent at 124).
    for forged in "120 09000000:has rank 9" "124 ffffffffffffffff:has a malformed size" \
      "24 ffffff7f:has a malformed name" "33 04000000:has a malformed size" \
      "end 01020304:holds more fields than the unit's state() reads" \
      "16 04000000:is not the state of unit 3"; do
      rm -rf "$work/f" && run 2 "$program" write "$work/f" 1
      "$program" forge-unit "$work/f" 3 "${forged%% *}" "$(echo "${forged#* }" | cut -d: -f1)" ||
        fail "forge-unit"
      fails "${forged#*:}" 2 "$program" read "$work/f"
      expect "unit 3 of collection 0 (bytes "
    done
    # Jacobi3D: another grid, a checkpoint past the run's end.
    run 2 "$jacobi" "${grid[@]}" -i 10 -w 0 --checkpoint-every 10 --checkpoint-dir "$work/j"
    fails "is of grid 24 20 18, not this run's 24 20 16" 2 "$jacobi" -x 24 -y 20 -z 16 -i 20 \
      -w 0 --restart "$work/j"
    fails "is at update 10, past this run's last (5)" 2 "$jacobi" "${grid[@]}" -i 5 -w 0 \
      --restart "$work/j"
    fails "--checkpoint-every and --checkpoint-dir go together" 1 "$jacobi" --checkpoint-every 3
    ;;
  links)
    # A link planted in a checkpoint directory is never followed (issue 31): not by a
    # write (latest.partial -> a file of the user's, left by an attacker or a crash), not
    # by a read (latest, a checkpoint, its manifest or a unit file as links).
    run 2 "$program" write "$work/l" 1
    echo "the user's own file" >"$work/victim"
    ln -s "$work/victim" "$work/l/latest.partial"
    run 2 "$program" write "$work/l" 1
    [[ $(cat "$work/victim") == "the user's own file" ]] || fail "the write followed latest.partial"
    [[ -f $work/l/latest && ! -L $work/l/latest ]] || fail "latest is not a plain file"
    run 2 "$program" read "$work/l"
    name=$(cut -d' ' -f1 "$work/l/latest")
    mv "$work/l/latest" "$work/latest" && ln -s "$work/latest" "$work/l/latest"
    fails "$work/l/latest is a symbolic link; kodo follows no link" 2 "$program" read "$work/l"
    rm "$work/l/latest" && mv "$work/latest" "$work/l/latest"
    mv "$work/l/$name" "$work/moved" && ln -s "$work/moved" "$work/l/$name"
    fails "checkpoint $work/l/$name is a symbolic link" 2 "$program" read "$work/l"
    rm "$work/l/$name" && mv "$work/moved" "$work/l/$name"
    for file in manifest rank-1.state; do
      mv "$work/l/$name/$file" "$work/moved" && ln -s "$work/moved" "$work/l/$name/$file"
      fails "$work/l/$name/$file is a symbolic link" 2 "$program" read "$work/l"
      rm "$work/l/$name/$file" && mv "$work/moved" "$work/l/$name/$file"
    done
    run 2 "$program" read "$work/l"
    # Sizes are checked before anything is read: a sparse 1 GiB latest is refused at once.
    cp "$work/l/latest" "$work/latest" && truncate -s 1G "$work/l/latest"
    fails "holds 1073741824 bytes, more than the 256 it may have" 2 "$program" read "$work/l"
    cp "$work/latest" "$work/l/latest"
    ;;
  kill)
    fails "signal 9" 2 "$program" kill "$work/k"
    [[ -d $work/k/checkpoint-1.partial ]] || fail "no partial checkpoint left behind"
    run 3 "$program" read "$work/k"
    expect "restored 7 units at step 1"
    run 2 "$program" write "$work/k" 3
    [[ ! -e $work/k/checkpoint-1.partial ]] || fail "the partial checkpoint was not removed"
    run 1 "$program" read "$work/k"
    expect "restored 7 units at step 3"
    ;;
  kill-moving)
    # A rank that dies while units move ends the job (no rank waits for it for ever).
    fails "signal 9" 2 "$program" kill-moving "$work/m"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "checkpoint_test ($case): ok"
