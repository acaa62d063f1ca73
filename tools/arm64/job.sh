#!/usr/bin/env bash
# The ARM64 job: run labkit's ISA-sensitive tests on AArch64 under qemu user-mode emulation.
#
#   tools/arm64/job.sh            # setup (cached) + tests with NEON and with SVE, side by side
#   tools/arm64/job.sh setup      # only build/refresh the cached arm64 root filesystem and venv
#   tools/arm64/job.sh shell      # an interactive shell in the rootfs (work tree at /labkit)
#
# Cache: .cache/arm64/ (~1 GB: a Debian bookworm arm64 minbase rootfs with python3, 300 MB, + a venv with
# labkit's dependencies at the host venv's versions).  Delete it to start cold.
# Needs root (chroot, mount, binfmt_misc).  When emulation is impossible here (not root, no
# binfmt_misc, no qemu-user-static and no way to install it) the job prints
# "ARM64 JOB NOT RUN: <reason>" and exits 0; a test failure exits non-zero.
# Env: ARM64_CACHE (cache dir), ARM64_TARGETS ("neon sve", or one of them), ARM64_PYTEST_ARGS.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${ARM64_CACHE:-$REPO/.cache/arm64}"
ROOT="$CACHE/rootfs"
SUITE=bookworm
VENV=/opt/venv
TARGETS="${ARM64_TARGETS:-neon sve}"
MODE="${1:-all}"
T0=$(date +%s)
mkdir -p "$CACHE"
[ -f "$CACHE/.gitignore" ] || echo '*' >"$CACHE/.gitignore"   # git never sees the rootfs

log() { printf '[arm64 %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
not_run() { echo "ARM64 JOB NOT RUN: $*"; exit 0; }

# ---------------------------------------------------------------- can we emulate at all?
[ "$(uname -s)" = Linux ] || not_run "needs Linux (qemu user-mode emulation + chroot), this is $(uname -s)"
[ "$(id -u)" = 0 ] || not_run "needs root (chroot, mount, binfmt_misc); run as root or in a root CI container"
HOST_ARCH="$(uname -m)"

need_pkgs=()
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
[ "$HOST_ARCH" = aarch64 ] || [ -x /usr/bin/qemu-aarch64-static ] || need_pkgs+=(qemu-user-static)
command -v update-binfmts >/dev/null || need_pkgs+=(binfmt-support)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || not_run "missing ${need_pkgs[*]} and no apt-get to install them"
    log "installing ${need_pkgs[*]} (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}"; } \
        >"$CACHE/apt.log" 2>&1 || { tail -5 "$CACHE/apt.log" || true;
          not_run "could not install ${need_pkgs[*]} with apt-get (log: $CACHE/apt.log)"; }
fi

if [ "$HOST_ARCH" != aarch64 ]; then
    if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null \
            || not_run "cannot mount binfmt_misc (an unprivileged container?)"
    fi
    if ! grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
        update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    fi
    grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 \
        || not_run "binfmt_misc has no enabled qemu-aarch64 handler (update-binfmts --enable qemu-aarch64 failed)"
    grep -qs 'flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 \
        || log "warning: the qemu-aarch64 handler lacks the F flag; copying the interpreter into the rootfs"
fi

# ---------------------------------------------------------------- the host's Debian mirror
# The mirror serving $SUITE in the host's own apt configuration (deb822 .sources or one-line lists).
host_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            /^[[:space:]]*$/ { if (uris != "" && ok && deb) { print uris; done=1; exit } uris=""; ok=0; deb=0; next }
            /^URIs:/   { uris=$2 }
            /^Types:/  { for (i=2;i<=NF;i++) if ($i=="deb") deb=1 }
            /^Suites:/ { for (i=2;i<=NF;i++) if ($i==suite) ok=1 }
            END { if (!done && uris != "" && ok && deb) print uris }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '$1=="deb" { u=""; s=""; for (i=2;i<=NF;i++) { if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; continue }
            if (u=="") u=$i; else if (s=="") s=$i } if (s==suite) print u }' "$f"
    done
}

# ---------------------------------------------------------------- rootfs (cached)
host_py() { if [ -x "$REPO/.venv/bin/python" ]; then "$REPO/.venv/bin/python" "$@"; else python3 "$@"; fi; }

# requirements: labkit's runtime dependencies + the test tools, pinned to the host venv's versions
requirements() {
    host_py - "$REPO/pyproject.toml" <<'EOF'
import re, sys, tomllib
from importlib import metadata
deps = tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]
skip = {"jupyterlab"}          # the JupyterLab server is not exercised under emulation
names = [re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0] for d in deps]
# + the test tools; scipy: tests/labs/test_bspline.py's peer (parasail has no aarch64 wheel, so
# tests/labs/test_alignment.py skips there and tests/test_arm64.py checks lab 01's kernels instead)
names = [n for n in names if n.lower() not in skip] + ["pytest", "ipykernel", "scipy"]
for n in names:
    try:
        print(f"{n}=={metadata.version(n)}")
    except metadata.PackageNotFoundError:
        print(next((d for d in deps if d.startswith(n)), n))
EOF
}

MOUNTS=()
cleanup() {
    local i
    for (( i=${#MOUNTS[@]}-1; i>=0; i-- )); do umount -l "${MOUNTS[$i]}" 2>/dev/null || true; done
    MOUNTS=()
}
trap cleanup EXIT
bind() {  # bind <host path> <path inside the rootfs> [ro]
    mkdir -p "$ROOT$2"
    mountpoint -q "$ROOT$2" && return 0
    mount --bind "$1" "$ROOT$2"
    [ "${3:-}" = ro ] && mount -o remount,bind,ro "$ROOT$2"
    MOUNTS+=("$ROOT$2")
}
mount_system() {
    mkdir -p "$ROOT/proc" "$ROOT/dev" "$ROOT/sys"
    mountpoint -q "$ROOT/proc" || { mount -t proc proc "$ROOT/proc"; MOUNTS+=("$ROOT/proc"); }
    bind /dev /dev
    bind /sys /sys ro
    # local package indexes / wheel dirs the host's pip configuration names (same paths inside)
    local p
    for p in $(pip_paths); do bind "$p" "$p" ro; done
}
pip_paths() {  # absolute directories named in the host's pip configuration and PIP_* variables
    { cat /etc/pip.conf "$HOME/.config/pip/pip.conf" "$HOME/.pip/pip.conf" 2>/dev/null
      env | grep '^PIP_' || true; } | grep -oE '(file://)?/[^[:space:]"]+' | sed -e 's#^file://##' -e 's#/$##' \
        | sed -e 's#/simple$##' \
        | while read -r d; do [ -d "$d" ] && echo "$d"; done | sort -u   # a local index: its files/ too
}
copy_host_config() {  # pip configuration, CA certificates, DNS: pip inside reaches the same index
    install -D -m 644 /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
    [ -f /etc/pip.conf ] && install -D -m 644 /etc/pip.conf "$ROOT/etc/pip.conf"
    [ -f "$HOME/.config/pip/pip.conf" ] && install -D -m 644 "$HOME/.config/pip/pip.conf" "$ROOT/root/.config/pip/pip.conf"
    [ -f "$HOME/.pip/pip.conf" ] && install -D -m 644 "$HOME/.pip/pip.conf" "$ROOT/root/.pip/pip.conf"
    if [ -d /etc/ssl/certs ]; then mkdir -p "$ROOT/etc/ssl"; cp -rL /etc/ssl/certs "$ROOT/etc/ssl/" 2>/dev/null || true; fi
    if [ -d /usr/local/share/ca-certificates ]; then
        mkdir -p "$ROOT/usr/local/share"; cp -r /usr/local/share/ca-certificates "$ROOT/usr/local/share/"; fi
    # a cert file named by the pip configuration outside /etc/ssl/certs
    local c
    for c in $( { cat /etc/pip.conf "$HOME/.config/pip/pip.conf" 2>/dev/null; env | grep '^PIP_CERT=' || true; } \
                | grep -oE '/[^[:space:]"]+\.(crt|pem)' | sort -u); do
        [ -f "$c" ] && install -D -m 644 "$c" "$ROOT$c"
    done
    if [ "$HOST_ARCH" != aarch64 ]; then install -D -m 755 /usr/bin/qemu-aarch64-static "$ROOT/usr/bin/qemu-aarch64-static"; fi
}
in_root() {  # run a command in the rootfs with a clean environment (+ PIP_* + extra VAR=value args)
    local envs=(HOME=/root PATH=$VENV/bin:/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb)
    while IFS= read -r v; do envs+=("$v"); done < <(env | grep -E '^(PIP_|https?_proxy=|HTTPS?_PROXY=|no_proxy=|NO_PROXY=)' || true)
    while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
    chroot "$ROOT" /usr/bin/env -i "${envs[@]}" "$@"
}

build_rootfs() {
    if [ -f "$ROOT/.labkit-rootfs" ]; then log "rootfs cached ($ROOT)"; return; fi
    local mirror
    mirror="$(host_mirror | head -1)"
    [ -n "$mirror" ] || { echo "ARM64 JOB FAILED: no Debian mirror for '$SUITE' in the host's /etc/apt/sources.list(.d)"; exit 2; }
    cleanup; rm -rf "$ROOT"; mkdir -p "$CACHE"
    # no ca-certificates package: its postinst rehashes every certificate under emulation (minutes);
    # the host's certificates are copied in instead (copy_host_config)
    log "debootstrap --arch=arm64 --variant=minbase $SUITE (the host's mirror)"
    debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv \
        "$SUITE" "$ROOT" "$mirror" >"$CACHE/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE/debootstrap.log"; echo "ARM64 JOB FAILED: debootstrap (log: $CACHE/debootstrap.log)"; exit 2; }
    echo "deb $mirror $SUITE main" >"$ROOT/etc/apt/sources.list"
    touch "$ROOT/.labkit-rootfs"
    log "rootfs built ($(du -sh "$ROOT" | cut -f1))"
}

host_pip_install() {  # host_pip_install <requirements file> <site-packages>: aarch64 wheels, natively
    local plats=() m
    for m in $(seq 36 -1 17); do plats+=(--platform "manylinux_2_${m}_aarch64"); done   # bookworm: glibc 2.36
    host_py -m pip install -q --only-binary=:all: "${plats[@]}" --platform manylinux2014_aarch64 \
        --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
        --target "$2" -r "$1"
}

build_venv() {
    local req want site=$VENV/lib/python3.11/site-packages
    req="$(requirements)"
    want="$(printf '%s\n' "$req" | sha256sum | cut -c1-16)"
    if [ -f "$ROOT$VENV/.labkit-venv" ] && [ "$(cat "$ROOT$VENV/.labkit-venv")" = "$want" ]; then
        log "venv cached ($VENV: $(printf '%s ' $req | grep -oE 'numba==[^ ]+|numpy==[^ ]+' | tr '\n' ' '))"; return
    fi
    rm -rf "$ROOT$VENV"
    printf '%s\n' "$req" >"$ROOT/tmp/requirements.txt"
    # pip under emulation takes minutes (its resolver, unpacking, ensurepip): the host's pip — its
    # own configuration and index — installs the aarch64 wheels straight into the rootfs's venv
    log "venv: host pip installs aarch64 wheels into the rootfs: $(echo $req)"
    in_root /usr/bin/python3 -m venv --without-pip "$VENV"
    [ -d "$ROOT$site" ] || { echo "ARM64 JOB FAILED: the rootfs's python is not 3.11 (no $site)"; exit 2; }
    if ! host_pip_install "$ROOT/tmp/requirements.txt" "$ROOT$site" >"$CACHE/pip.log" 2>&1; then
        log "host pip could not install aarch64 wheels (.cache/arm64/pip.log); pip in the rootfs resolves"
        rm -rf "$ROOT$VENV"; in_root /usr/bin/python3 -m venv "$VENV"
        if ! in_root "$VENV/bin/python" -m pip install -q --no-cache-dir -r /tmp/requirements.txt >"$CACHE/pip.log" 2>&1; then
            tail -20 "$CACHE/pip.log"; echo "ARM64 JOB FAILED: pip install in the arm64 venv (log: $CACHE/pip.log)"; exit 2
        fi
    fi
    echo "$want" >"$ROOT$VENV/.labkit-venv"
    log "venv ready ($(du -sh "$ROOT$VENV" | cut -f1))"
}

copy_tree() {  # the work tree as it is (tracked + untracked, not ignored) -> /labkit in the rootfs
    rm -rf "$ROOT/labkit"; mkdir -p "$ROOT/labkit"
    (cd "$REPO" && { git ls-files -co --exclude-standard -z -- . ':(exclude).cache' ':(exclude).venv' 2>/dev/null || find . -path ./.git -prune -o -path ./.venv -prune \
        -o -path ./.cache -prune -o -type f -print0; } | xargs -0 -r tar -cf - --ignore-failed-read 2>/dev/null) \
        | tar -xf - -C "$ROOT/labkit"
}

# ---------------------------------------------------------------- the ISA-sensitive subset
# NEON: the whole list; SVE: the compile/inspect/check half (kernels already ran under NEON) and
# lab 04's whole search.
subset() { grep -vE '^[[:space:]]*(#|$)' "$HERE/tests-$1.txt"; }

# lab 04's order-3 search compiles for minutes under qemu (170 s for SVE alone here; 390 s at
# load 3 on a slower host): it runs in the SVE run, which is shorter than the NEON one beside it,
# and is left out of the NEON run unless ARM64_PYTEST_ARGS is given. Alone:
#   ARM64_TARGETS=neon ARM64_PYTEST_ARGS="-k entry_point_small" tools/arm64/job.sh
SLOW="--deselect=tests/test_arm64.py::test_epistasis_entry_point_small"

# numba's cache of the labkit under test, one per target, kept in the cached rootfs while labkit/'s
# sources and the venv stay the same (a run of the same commit loads what the last one compiled;
# numba stamps entries by their source's bytes and labkit keys them on its sources besides);
# anything else changed, it starts empty and every kernel compiles, as on a fresh machine
numba_cache() {  # numba_cache neon|sve
    local dir="$ROOT/tmp/labkit-numba-$1" key
    key="$( (cd "$ROOT/labkit" && find labkit -type f -name '*.py' -print0 | sort -z \
             | xargs -0 sha256sum; cat "$ROOT$VENV/.labkit-venv") | sha256sum | cut -c1-16)"
    if [ "$(cat "$dir/.labkit-key" 2>/dev/null)" = "$key" ]; then
        log "[$1] numba cache kept from the last run of this labkit ($key)"
    else
        rm -rf "$dir"; mkdir -p "$dir"; echo "$key" >"$dir/.labkit-key"
        log "[$1] numba cache empty: labkit or the venv changed ($key)"
    fi
}

run_target() {  # run_target neon|sve -> pytest exit code
    local t=$1 envs=(PYTHONPATH=/labkit LABKIT_SPEED=report LABKIT_TEST_TIER=all
                     NUMBA_CACHE_DIR=/tmp/labkit-numba-$1 MPLBACKEND=Agg)
    numba_cache "$t"
    case $t in
        neon) envs+=(QEMU_CPU=max,sve=off) ;;
        sve)  envs+=(QEMU_CPU=max,sve-default-vector-length=32 NUMBA_CPU_NAME=neoverse-v1 NUMBA_CPU_FEATURES=+sve
                     LABKIT_ARM64_SVE_BITS=256) ;;
        *) echo "unknown target $t"; return 2 ;;
    esac
    mapfile -t ids < <(subset "$t")
    log "pytest [$t: ${envs[*]:5}] $(printf '%s ' "${ids[@]}")"
    set +e
    in_root "${envs[@]}" /bin/sh -c 'cd /labkit && exec "$0" "$@"' "$VENV/bin/python" -m pytest \
        -o addopts= -p no:cacheprovider -p no:nbval -v -ra --durations=10 \
        --basetemp="/tmp/pytest-arm64-$t" ${ARM64_PYTEST_ARGS:-$([ "$t" = neon ] && echo "$SLOW")} "${ids[@]}"
    local rc=$?
    set -e
    log "[$t] pytest exit $rc"
    return $rc
}

build_rootfs
copy_host_config
mount_system
build_venv
[ "$MODE" = setup ] && { log "setup done"; exit 0; }
copy_tree
if [ "$MODE" = shell ]; then in_root PYTHONPATH=/labkit /bin/bash; exit $?; fi

log "arm64 python: $(in_root $VENV/bin/python -c 'import platform, numba, llvmlite.binding as l; print(platform.machine(), "numba", numba.__version__, "LLVM host", l.get_host_cpu_name())')"
# the targets side by side, one qemu process each (emulation is single-threaded: on a 2-core
# machine the two runs take about as long as the longer one alone); their logs one after the other
status=0
pids=()
for t in $TARGETS; do
    run_target "$t" >"$CACHE/pytest-$t.log" 2>&1 &
    pids+=($!)
done
i=0
for t in $TARGETS; do
    wait "${pids[$i]}" || status=$?
    i=$((i + 1))
    echo "---------------------------------------------------------------- [$t]"
    cat "$CACHE/pytest-$t.log"
done
log "ARM64 JOB $([ $status = 0 ] && echo PASSED || echo FAILED) (targets: $TARGETS; $(( $(date +%s) - T0 )) s)"
exit $status
