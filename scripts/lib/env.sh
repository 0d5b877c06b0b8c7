# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# shellcheck shell=bash
# Environment library for kodo's scripts. Source it; do not execute it.
#
# Default (KODO_ENV unset or "trixie"): tools come from a Debian trixie root
# (Kokkos from unstable) kept outside the repository and entered with
# unshare + chroot, because stable hosts ship no usable Kokkos.
# KODO_ENV=system: use whatever the host provides (HPC systems, GPU hosts).
#
# Environment variables honoured:
#   KODO_ENV            trixie (default) | system
#   KODO_CACHE          cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/kodo)
#   KODO_DEBIAN_MIRROR  Debian mirror URL (default: taken from the host's apt sources)
#   KODO_BUILD_DIR      build dir (default <repo>/build/host, or build/system with
#                       KODO_ENV=system; must be inside the repo for trixie)
#   KODO_BUILD_TYPE     CMAKE_BUILD_TYPE (default Release)
#   KODO_CMAKE_ARGS     extra cmake configure arguments (word-split)
#   KODO_MPIEXEC        MPI launcher (default mpiexec)
#   KODO_MPIEXEC_FLAGS  extra launcher flags (default by the launcher's MPI:
#                       --oversubscribe for Open MPI, none for MPICH and others)
#   KODO_PASS_ENV       names of more variables for kodo_exec to pass (space-separated)
#
# What reaches commands (kodo_exec) in the trixie environment: every variable named
# KODO_*, KOKKOS_*, UCX_*, OMPI_*, PRTE_*, OMP_*, CTEST_*, ASAN_*, UBSAN_* or LSAN_*,
# CI, and those named in KODO_PASS_ENV; HOME=/root, LANG=C.UTF-8 and a standard PATH
# of the root; defaults OMP_NUM_THREADS=1, OMP_PROC_BIND=false, OMPI_MCA_btl=self,sm and
# OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1. Every other variable is dropped. With
# KODO_ENV=system the whole environment passes, with the defaults above except
# OMPI_MCA_btl.

kodo_die() {
  printf 'kodo: error: %s\n' "$*" >&2
  exit 1
}

kodo_say() {
  printf 'kodo: %s\n' "$*" >&2
}

# Resolved at source time: BASH_SOURCE may be relative to the caller's cwd.
_KODO_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
_KODO_TOP=$(git -C "$_KODO_TOP" rev-parse --show-toplevel 2>/dev/null || printf '%s\n' "$_KODO_TOP")

kodo_repo_root() {
  printf '%s\n' "$_KODO_TOP"
}

# Checked at source time: a kodo_die inside $(...) would not stop the script.
_KODO_MODE=${KODO_ENV:-trixie}
case $_KODO_MODE in
  trixie | system) ;;
  *) kodo_die "KODO_ENV='$KODO_ENV' is not supported; use 'trixie' (default) or 'system'" ;;
esac

kodo_env_mode() {
  printf '%s\n' "$_KODO_MODE"
}

kodo_cache_dir() {
  printf '%s\n' "${KODO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kodo}"
}

kodo_root_dir() {
  printf '%s/trixie\n' "$(kodo_cache_dir)"
}

# Separate defaults per environment: a CMake cache configured with one
# toolchain breaks, or silently mixes, when reused with the other.
kodo_build_dir() {
  local def=host
  [[ $_KODO_MODE == system ]] && def=system
  local dir=${KODO_BUILD_DIR:-$(kodo_repo_root)/build/$def}
  [[ $dir == /* ]] || dir=$PWD/$dir
  printf '%s\n' "$dir"
}

# Changing any of this (and only this) re-runs the apt step of provisioning.
KODO_PACKAGES=(g++ cmake ninja-build make binutils pkg-config git clang-format
  libopenmpi-dev openmpi-bin libucx-dev libhwloc-dev libgtest-dev hipcc libxxhash-dev xxhash doxygen
  python3-yaml libkokkos-dev/unstable)
KODO_PIN='Package: *
Pin: release a=unstable
Pin-Priority: 100'
# Kokkos' CMake config names archives the Debian package does not ship.
KODO_KOKKOS_STUBS=(libkokkosalgorithms.a libkokkossimd.a)

_kodo_spec_hash() {
  printf '%s\n' "${KODO_PACKAGES[*]}" "$KODO_PIN" "${KODO_KOKKOS_STUBS[*]}" v1 |
    sha256sum | cut -d' ' -f1
}

# The mirror serving the Debian archive (not -security) in the host's apt setup.
_kodo_host_mirror() {
  local releases='^(buster|bullseye|bookworm|trixie|forky|duke|sid|oldstable|stable|testing|unstable)(-updates|-backports)?$'
  local f
  {
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -r $f ]] || continue
      # deb822: one stanza per paragraph; emit "URI SUITE" pairs.
      awk 'BEGIN { RS = ""; FS = "\n" }
        { u = ""; s = ""
          for (i = 1; i <= NF; i++) {
            if ($i ~ /^URIs:/)   { u = $i; sub(/^URIs:[ \t]*/, "", u) }
            if ($i ~ /^Suites:/) { s = $i; sub(/^Suites:[ \t]*/, "", s) }
          }
          n = split(u, us, /[ \t]+/); m = split(s, ss, /[ \t]+/)
          for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) print us[a], ss[b] }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -r $f ]] || continue
      # "deb [options] URI SUITE COMPONENTS..."
      sed -E -n 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' "$f"
    done
  } | while read -r uri suite; do
    uri=${uri%/}
    if [[ $uri == */debian && $suite =~ $releases ]]; then
      printf '%s\n' "$uri"
      break
    fi
  done
}

kodo_mirror() {
  local m=${KODO_DEBIAN_MIRROR:-$(_kodo_host_mirror)}
  [[ -n $m ]] || kodo_die "no Debian mirror found in /etc/apt; set KODO_DEBIAN_MIRROR (e.g. a URL ending in /debian)"
  printf '%s\n' "${m%/}"
}

# _kodo_in_root ROOT CWD NBINDS BIND... CMD...: run CMD chrooted in ROOT with the
# current environment. The NBINDS directories BIND (absolute, resolved, none inside
# another) are bind-mounted at the same paths, and with them, when there are any, the
# host's CUDA toolkit at /usr/local/cuda when there is one.
# The private mount namespace drops all mounts when CMD exits, so nothing
# leaks and concurrent runs do not interfere.
_kodo_in_root() {
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --mount --propagation private -- /bin/bash -c '
    fail() { printf "kodo: error: %s\n" "$*" >&2; exit 125; }
    r=$1 cwd=$2 cuda=$3 n=$4; shift 4
    binds=("${@:1:n}"); shift "$n"
    mount -t proc proc "$r/proc" || fail "cannot mount /proc in $r"
    mount --rbind /sys "$r/sys" || fail "cannot bind /sys into $r"
    mount --rbind /dev "$r/dev" || fail "cannot bind /dev into $r"
    mount -t tmpfs tmpfs "$r/dev/shm" || fail "cannot mount /dev/shm in $r"
    real=$(realpath "$r")
    for bind in "${binds[@]}"; do
      # A symbolic link on the way (e.g. /var/run) would lead the mount out of the root.
      [[ $(realpath -m "$r$bind") == "$real$bind" ]] ||
        fail "cannot bind $bind into $r: part of that path is a symbolic link in the root"
      mkdir -p "$r$bind" && mount --bind "$bind" "$r$bind" ||
        fail "cannot bind $bind into $r"
    done
    # The host CUDA toolkit, read-only, for the CUDA backend compile checks.
    if [[ $n -gt 0 && -n $cuda ]]; then
      mkdir -p "$r/usr/local/cuda" && mount --bind -o ro "$cuda" "$r/usr/local/cuda" ||
        fail "cannot bind $cuda into $r"
    fi
    exec chroot "$r" /bin/bash -c "cd \"\$1\" && shift && exec \"\$@\"" kodo "$cwd" "$@"
  ' kodo "$1" "$2" "$(_kodo_host_cuda)" "${@:3}"
}

# The host's CUDA toolkit directory, if it has one (nvcc compiles, nothing runs).
_kodo_host_cuda() {
  [[ -x /usr/local/cuda/bin/nvcc ]] && readlink -f /usr/local/cuda
  return 0
}

_kodo_need_root() {
  [[ $EUID -eq 0 ]] || kodo_die "the trixie environment needs root (debootstrap, mount namespaces, chroot); \
rerun as root, or set KODO_ENV=system to use the host's own Kokkos/MPI/UCX"
}

_kodo_ensure_debootstrap() {
  command -v debootstrap >/dev/null && return
  if command -v apt-get >/dev/null; then
    kodo_say "installing debootstrap on the host"
    if apt-get update >>"$1" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >>"$1" 2>&1; then
      return
    fi
    tail -n 15 "$1" >&2
  fi
  kodo_die "debootstrap is missing and could not be installed; install it (package 'debootstrap') or set KODO_ENV=system"
}

# Print the tail of the log and die.
_kodo_fail_log() {
  printf '%s\n' "--- last lines of $1 ---" >&2
  tail -n 20 "$1" >&2
  printf '%s\n' "---" >&2
  kodo_die "$2"
}

_kodo_debootstrap() {
  local target=$1 mirror=$2 log=$3
  local script=trixie keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  local -a args=(--variant=minbase)
  # Ubuntu's debootstrap may predate trixie; sid's script handles it.
  [[ -e /usr/share/debootstrap/scripts/trixie ]] || script=sid
  if [[ ! -e $keyring ]] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y debian-archive-keyring >>"$log" 2>&1 || true
  fi
  [[ -e $keyring ]] && args+=(--keyring="$keyring")
  rm -rf --one-file-system "$target"
  kodo_say "debootstrap trixie from $mirror (log: $log)"
  # In a private mount namespace so that a killed debootstrap leaves no
  # mounts behind inside $target.
  unshare --mount --propagation private -- \
    debootstrap "${args[@]}" trixie "$target" "$mirror" "$script" >>"$log" 2>&1 ||
    _kodo_fail_log "$log" "debootstrap failed (log above); if it could not download, \
check that $mirror is reachable or set KODO_DEBIAN_MIRROR to a working Debian mirror"
}

_kodo_apt_install() {
  local root=$1 mirror=$2 log=$3 stub
  kodo_say "installing toolchain packages into $root"
  printf 'deb %s trixie main\n' "$mirror" >"$root/etc/apt/sources.list"
  printf 'deb %s unstable main\n' "$mirror" >"$root/etc/apt/sources.list.d/unstable.list"
  printf '%s\n' "$KODO_PIN" >"$root/etc/apt/preferences.d/kodo-unstable"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  local -a apt=(apt-get -o Acquire::Check-Valid-Until=false)
  # unstable's Release file may be past Valid-Until on snapshot mirrors.
  # shellcheck disable=SC2016 # expanded by the inner shell
  _kodo_in_root "$root" / 0 /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 /bin/bash -c '
      set -e
      "${@:2:$1}" update
      "${@:2:$1}" install -y --no-install-recommends "${@:$(($1 + 2))}"
      apt-get clean
    ' kodo "${#apt[@]}" "${apt[@]}" "${KODO_PACKAGES[@]}" >>"$log" 2>&1 ||
    _kodo_fail_log "$log" "package installation in $root failed (log above); if it could not download, \
check that $mirror is reachable or set KODO_DEBIAN_MIRROR to a working Debian mirror"
  for stub in "${KODO_KOKKOS_STUBS[@]}"; do
    stub=$root/usr/lib/x86_64-linux-gnu/$stub
    [[ -e $stub ]] || chroot "$root" ar rc "${stub#"$root"}" ||
      kodo_die "cannot create ${stub#"$root"} in $root"
  done
}

# Idempotent; fast (no forks beyond one sha256sum) when already provisioned.
kodo_provision() {
  [[ $(kodo_env_mode) == system ]] && return 0
  _kodo_need_root
  local cache root stamp hash
  cache=$(kodo_cache_dir)
  root=$cache/trixie
  stamp=$cache/trixie.stamp
  hash=$(_kodo_spec_hash)
  if [[ -d $root && -r $stamp && $(<"$stamp") == "$hash" ]]; then
    return 0
  fi
  mkdir -p "$cache" || kodo_die "cannot create cache dir $cache (set KODO_CACHE)"
  (
    # Serialise concurrent provisioning; the loser finds the stamp done.
    if ! flock -n 9; then
      kodo_say "waiting for another kodo run that is provisioning $root"
      flock 9 || kodo_die "cannot lock $cache/lock"
    fi
    if [[ -d $root && -r $stamp && $(<"$stamp") == "$hash" ]]; then
      exit 0
    fi
    local log=$cache/provision.log mirror
    : >"$log"
    mirror=$(kodo_mirror) || exit
    if [[ ! -d $root ]]; then
      kodo_say "provisioning Debian trixie root in $root (one time, ~1 min)"
      _kodo_ensure_debootstrap "$log"
      # Build under .partial and rename, so an interrupted run never leaves
      # a root that looks complete.
      _kodo_debootstrap "$root.partial" "$mirror" "$log"
      mv "$root.partial" "$root"
    else
      kodo_say "package set changed; updating $root"
    fi
    rm -f "$stamp"
    _kodo_apt_install "$root" "$mirror" "$log"
    printf '%s\n' "$hash" >"$stamp"
    kodo_say "environment ready"
  ) 9>"$cache/lock" || exit
}

# Directories outside the repository that kodo_exec makes visible (kodo_bind).
_KODO_BINDS=()

# kodo_bind DIR...: make the existing directories DIR visible, at the same paths, to
# the commands kodo_exec runs from now on (the repository always is). Dies when a DIR
# is not a directory, or would hold the environment's root or lie inside it.
kodo_bind() {
  local dir real root
  root=$(kodo_root_dir)
  for dir in "$@"; do
    [[ -d $dir ]] || kodo_die "$dir is not a directory"
    real=$(cd "$dir" && pwd -P) || kodo_die "cannot enter $dir"
    if [[ $(kodo_env_mode) == trixie ]]; then
      [[ -d $root ]] && root=$(cd "$root" && pwd -P)
      case $root/ in
        "${real%/}"/*) kodo_die "$dir holds the kodo environment $root, so it cannot be shown \
inside it; use a directory that does not contain $root" ;;
      esac
      case $real/ in
        "$root"/*) kodo_die "$dir is inside the kodo environment $root; use a directory outside it" ;;
      esac
    fi
    _KODO_BINDS+=("$real")
  done
}

# Whether PATH is DIR or inside it.
_kodo_is_within() {
  [[ $1 == "$2" || $1 == "${2%/}"/* ]]
}

# The directories to bind: the repository and kodo_bind's, less those inside another.
_kodo_binds() {
  local -a all=("$(kodo_repo_root)" "${_KODO_BINDS[@]}")
  local a b
  for a in "${all[@]}"; do
    for b in "${all[@]}"; do
      [[ $a != "$b" ]] && _kodo_is_within "$a" "$b" && continue 2
    done
    printf '%s\n' "$a"
  done | sort -u
}

# Whether the commands kodo_exec runs see PATH (always with KODO_ENV=system).
kodo_visible() {
  [[ $(kodo_env_mode) == system ]] && return 0
  local dir
  while read -r dir; do
    _kodo_is_within "$1" "$dir" && return 0
  done < <(_kodo_binds)
  return 1
}

# kodo_exec CMD [ARGS...]: run CMD in the environment, in the current directory
# (which must be inside the repository or a directory given to kodo_bind), with the
# environment described at the top of this file. Returns CMD's exit status.
kodo_exec() {
  [[ $# -gt 0 ]] || kodo_die "kodo_exec: no command given"
  local name
  local -a named
  read -r -a named <<<"${KODO_PASS_ENV:-}"
  for name in ${named[@]+"${named[@]}"}; do
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
      kodo_die "KODO_PASS_ENV: '$name' is not the name of an environment variable"
  done
  local -a vars=(
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
    OMP_PROC_BIND="${OMP_PROC_BIND:-false}"
    OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  )
  if [[ $(kodo_env_mode) == system ]]; then
    env "${vars[@]}" "$@"
    return
  fi
  _kodo_need_root
  local root cwd
  local -a binds
  cwd=$(pwd -P)
  root=$(kodo_root_dir)
  [[ -d $root ]] || kodo_die "environment not provisioned; call kodo_provision first"
  kodo_visible "$cwd" || kodo_die "current directory $cwd is outside the repository \
$(kodo_repo_root) and the directories bound into the environment, which are all it can see"
  mapfile -t binds < <(_kodo_binds)
  vars+=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  # The root only ever runs ranks on one host, so shared memory suffices.
  # Open MPI's defaults cost ~1 s per launch (libfabric probing in the ofi
  # btl) and the tcp btl warns about unpairable interfaces on some hosts.
  vars+=(OMPI_MCA_btl="${OMPI_MCA_btl:-self,sm}")
  [[ -n ${CI+x} ]] && vars+=("CI=$CI")
  for name in $(compgen -e); do
    case $name in
      KODO_* | KOKKOS_* | UCX_* | OMPI_* | PRTE_* | OMP_* | CTEST_* | ASAN_* | UBSAN_* | LSAN_*)
        vars+=("$name=${!name}") ;;
    esac
  done
  for name in ${named[@]+"${named[@]}"}; do
    [[ -n ${!name+x} ]] && vars+=("$name=${!name}")
  done
  _kodo_in_root "$root" "$cwd" "${#binds[@]}" "${binds[@]}" /usr/bin/env -i "${vars[@]}" "$@"
}

# The CMake generator arguments: Ninja, unless KODO_ENV=system and the host has none.
kodo_cmake_generator() {
  if [[ $(kodo_env_mode) == system ]] && ! command -v ninja >/dev/null; then
    return 0
  fi
  printf '%s\n' -G Ninja
}

# Configure once (cmake re-runs itself when CMakeLists change).
kodo_configure() {
  local repo build
  local -a gen extra=()
  repo=$(kodo_repo_root)
  build=$(kodo_build_dir)
  mapfile -t gen < <(kodo_cmake_generator)
  read -r -a extra <<<"${KODO_CMAKE_ARGS:-}"
  if [[ $(kodo_env_mode) == trixie && $build/ != "$repo"/* ]]; then
    kodo_die "KODO_BUILD_DIR=$build is outside the repository $repo, which is all the trixie environment can see"
  fi
  if [[ ! -f $build/build.ninja && ! -f $build/Makefile ]]; then
    (cd "$repo" && kodo_exec cmake -S "$repo" -B "$build" "${gen[@]}" \
      -DCMAKE_BUILD_TYPE="${KODO_BUILD_TYPE:-Release}" "${extra[@]}")
  fi
}

# Configure once, then build everything.
kodo_build() {
  kodo_configure
  (cd "$(kodo_repo_root)" && kodo_exec cmake --build "$(kodo_build_dir)" -j "$(nproc)")
}

# kodo_build_target TARGET: configure once, then build TARGET only.
kodo_build_target() {
  kodo_configure
  (cd "$(kodo_repo_root)" && kodo_exec cmake --build "$(kodo_build_dir)" -j "$(nproc)" --target "$1")
}

# kodo_has_target NAME: configure once; true when the build has a target NAME (the help
# target lists them: "NAME: phony" with Ninja, "... NAME" with Make).
kodo_has_target() {
  kodo_configure
  (cd "$(kodo_repo_root)" && kodo_exec cmake --build "$(kodo_build_dir)" --target help) |
    awk -v name="$1" '$1 == name ":" || ($1 == "..." && $2 == name) { found = 1 } END { exit !found }'
}

# The kodo install that projects of one's own build against (scripts/project).
kodo_install_dir() {
  printf '%s/install\n' "$(kodo_build_dir)"
}

# Dies unless $1 is a positive number of ranks.
kodo_check_ranks() {
  [[ $1 =~ ^[1-9][0-9]*$ ]] || kodo_die "-n: '$1' is not a positive integer"
}

# kodo_mpiexec_flags_for VERSION_TEXT: the launcher flags for an MPI whose
# `mpiexec --version` says VERSION_TEXT: --oversubscribe for Open MPI ("Open MPI" in
# 5, "OpenRTE" in 4), which refuses more ranks than cores without it; none for others
# (MPICH's Hydra refuses the flag). The tests' CMake follows the same rule
# (cmake/kodoMpiexecFlags.cmake).
kodo_mpiexec_flags_for() {
  case $1 in
    *"Open MPI"* | *OpenRTE*) printf '%s\n' --oversubscribe ;;
    *) printf '\n' ;;
  esac
}

# kodo_mpiexec_flags: KODO_MPIEXEC_FLAGS if set (even empty), else the flags for the
# MPI of KODO_MPIEXEC (its --version, asked in the environment).
kodo_mpiexec_flags() {
  if [[ -n ${KODO_MPIEXEC_FLAGS+set} ]]; then
    printf '%s\n' "$KODO_MPIEXEC_FLAGS"
  else
    kodo_mpiexec_flags_for "$(kodo_exec "${KODO_MPIEXEC:-mpiexec}" --version 2>&1 || true)"
  fi
}

# kodo_mpiexec RANKS PROGRAM [ARGS...]: launch PROGRAM on RANKS ranks in the
# environment, with KODO_MPIEXEC and its flags (kodo_mpiexec_flags). Returns its exit
# status.
kodo_mpiexec() {
  local ranks=$1
  local -a flags
  shift
  read -r -a flags <<<"$(kodo_mpiexec_flags)"
  kodo_exec "${KODO_MPIEXEC:-mpiexec}" -n "$ranks" "${flags[@]}" "$@"
}
