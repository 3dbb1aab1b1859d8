#!/usr/bin/env bash
# The Python package's tests on the CPython versions around the machine's own, each in a minimal Debian root
# made by debootstrap from Debian's archive:
#
#   bullseye (Debian 11): CPython 3.9, the oldest the abi3 wheel is for, with `str`'s layout before 3.12;
#   sid (Debian unstable): each CPython from 3.12 on that it packages (3.13, 3.14 and 3.15 when this was
#                          written), with the layout from 3.12 on.
#
# The wheel and the CLI are built once, in the oldest root (so they need no newer glibc than it has), with the
# host's Rust toolchain. Each interpreter gets a venv with the wheel, the test dependencies and pyspark, and runs
# crates/neardup-py/tests as CI does: against the CLI, on ../shared/eval, Spark on local[2] with the root's Java.
# Each one's log is kept beside the roots; exits 0 when every interpreter passes.
#
#   sudo tools/python-versions/check.sh [ROOTS]     # ROOTS: where the roots are kept (default /var/tmp/neardup-pythons)
#
# Needs root (debootstrap, chroot, mount), Debian's archive and PyPI, and rustup's toolchain in $CARGO_HOME and
# $RUSTUP_HOME (default ~/.cargo and ~/.rustup). The first run takes about 12 GB (1.3 GB a venv, 2 GB the build)
# and 50 minutes on 2 cores; later runs reuse the roots, the venvs and the build, and rebuild only what changed
# (about 15 minutes).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# The repository and ../shared beside it appear in each root at the same paths as here.
work=$(dirname "$repo")
roots=${1:-/var/tmp/neardup-pythons}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
# The build, shared by the roots (bind-mounted into each at the same path).
target=/var/tmp/neardup-target

[ "$(id -u)" = 0 ] || { echo "check.sh: run as root (debootstrap, chroot and mount need it)" >&2; exit 2; }
[ -x "$cargo_home/bin/cargo" ] || { echo "check.sh: no cargo in $cargo_home/bin (set CARGO_HOME)" >&2; exit 2; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
mkdir -p "$roots/logs" "$roots/target"

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() {
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounted+=("$2")
}

# Runs a command in a root, in an environment of its own (the host's pip, cargo and venv settings stay
# outside), but through the host's proxy where it has one.
in_root() {
  local root=$1 name proxies=()
  shift
  for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!name:-}" ] && proxies+=("$name=${!name}")
  done
  chroot "$root" env -i HOME=/root LANG=C.UTF-8 PATH=/opt/cargo/bin:/usr/local/bin:/usr/bin:/bin CARGO_HOME=/opt/cargo \
    RUSTUP_HOME=/opt/rustup PIP_CERT=/etc/neardup-host-ca.crt CARGO_HTTP_CAINFO=/etc/neardup-host-ca.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 DEBIAN_FRONTEND=noninteractive \
    "${proxies[@]}" "$@"
}

# The first of the packages that the root's archive has.
first_available() {
  local root=$1 package
  shift
  for package in "$@"; do
    if in_root "$root" apt-cache show "$package" >/dev/null 2>&1; then
      echo "$package"
      return
    fi
  done
  echo "check.sh: $root has none of $*" >&2
  return 1
}

# Makes (once) and opens the root of a Debian suite: the host's name resolution and CA certificates (a proxy's,
# where there is one), /proc and /dev, the repository, the toolchain and the build.
open_root() {
  local suite=$1 root=$roots/$1
  if [ ! -f "$root/.neardup-root" ]; then
    rm -rf "$root"
    echo "== debootstrap $suite (a few minutes)"
    debootstrap --variant=minbase --include=ca-certificates "$suite" "$root" >"$roots/logs/debootstrap-$suite.log" 2>&1 \
      || { tail -5 "$roots/logs/debootstrap-$suite.log" >&2; exit 1; }
    touch "$root/.neardup-root"
  fi
  cp /etc/resolv.conf /etc/hosts "$root/etc/"
  # Not over the root's own bundle, which its packages' triggers rebuild from the root's certificates alone.
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/neardup-host-ca.crt"
  # Packages that install a service (redis-server) leave it stopped.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  bind /proc "$root/proc"
  bind /dev "$root/dev"
  bind /dev/pts "$root/dev/pts"
  bind "$work" "$root$work"
  bind "$cargo_home" "$root/opt/cargo"
  bind "$rustup_home" "$root/opt/rustup"
  bind "$roots/target" "$root$target"
  # A mirror's copy of unstable can carry a Release file past its Valid-Until date.
  in_root "$root" apt-get update -qq -o Acquire::Check-Valid-Until=false
}

# A venv for each interpreter, with the test dependencies (pip picks the versions each one supports), as
# wheels only (but pyspark, which PyPI has only as source, in Python): a CPython newer than the wheels on PyPI
# (numpy's, scipy's, pyarrow's) is skipped, not built for.
make_venv() {
  local root=$1 python=$2
  if [ ! -x "$root/venvs/$python/bin/python" ]; then
    in_root "$root" "$python" -m venv "/venvs/$python"
  fi
  in_root "$root" "/venvs/$python/bin/pip" install --quiet --upgrade pip
  in_root "$root" "/venvs/$python/bin/pip" install --quiet --only-binary :all: --no-binary pyspark \
    -r "$repo/crates/neardup-py/tests/requirements.txt" >"$roots/logs/$python-pip.log" 2>&1
}

passed=()
failed=()
skipped=()
# The suite in an interpreter's venv (made by make_venv), with the wheel built below.
run_tests() {
  local root=$1 python=$2 log=$roots/logs/$2.log
  echo "== $python: $(in_root "$root" "$python" -VV | head -1)"
  in_root "$root" "/venvs/$python/bin/pip" install --quiet --force-reinstall --no-deps "$target/wheel/$wheel"
  if in_root "$root" bash -c "cd '$repo' && NEARDUP_BIN='$target/debug/neardup' NEARDUP_REQUIRE_SPARK=1 \
      '/venvs/$python/bin/python' -m pytest -q -p no:cacheprovider crates/neardup-py/tests" >"$log" 2>&1; then
    tail -1 "$log"
    passed+=("$python")
  else
    tail -15 "$log"
    failed+=("$python")
  fi
}

# The oldest: CPython 3.9, where the wheel and the CLI are built.
old=$roots/bullseye
open_root bullseye
in_root "$old" apt-get install -y -qq python3 python3-venv build-essential zstd redis-server \
  "$(first_available "$old" openjdk-17-jre-headless default-jre-headless)" >/dev/null
# Its venv also holds maturin, which builds the wheel.
make_venv "$old" python3.9 || { tail -5 "$roots/logs/python3.9-pip.log" >&2; exit 1; }
echo "== building the wheel and the CLI in bullseye (its glibc)"
rm -rf "$roots/target/wheel"
in_root "$old" env CARGO_TARGET_DIR="$target" CARGO_INCREMENTAL=0 bash -c "cd '$repo' \
  && cargo build --quiet --locked -p neardup-cli \
  && /venvs/python3.9/bin/maturin build --quiet --profile dev --locked -m crates/neardup-py/Cargo.toml \
     -i /venvs/python3.9/bin/python -o '$target/wheel'" >"$roots/logs/build.log" 2>&1 \
  || { tail -20 "$roots/logs/build.log" >&2; exit 1; }
wheel=$(cd "$roots/target/wheel" && echo neardup-*.whl)
run_tests "$old" python3.9

# The newest: every CPython from 3.12 on that Debian unstable packages.
new=$roots/sid
open_root sid
pythons=()
for minor in 12 13 14 15 16 17; do
  if in_root "$new" apt-cache show "python3.$minor-venv" >/dev/null 2>&1; then
    pythons+=("python3.$minor")
  fi
done
[ ${#pythons[@]} -gt 0 ] || { echo "check.sh: sid packages no CPython from 3.12 on" >&2; exit 1; }
venv_packages=()
for python in "${pythons[@]}"; do venv_packages+=("$python" "$python-venv"); done
in_root "$new" apt-get install -y -qq "${venv_packages[@]}" zstd redis-server \
  "$(first_available "$new" openjdk-21-jre-headless openjdk-17-jre-headless default-jre-headless)" >/dev/null
for python in "${pythons[@]}"; do
  if make_venv "$new" "$python"; then
    run_tests "$new" "$python"
  else
    echo "== $python: skipped, the test dependencies have no wheels for it yet ($roots/logs/$python-pip.log)"
    skipped+=("$python")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "check.sh: failed on ${failed[*]} (logs in $roots/logs)" >&2
  exit 1
fi
[ ${#skipped[@]} -eq 0 ] || echo "check.sh: skipped ${skipped[*]}: no wheels of the test dependencies yet"
echo "check.sh: passed on ${passed[*]} (logs in $roots/logs)"
