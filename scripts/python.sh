#!/usr/bin/env bash
# voxcast from Python (the package in python/).
#   scripts/python.sh wheel [PROFILE]  builds the wheel users install (abi3: one wheel for
#                              CPython 3.9 and later; manylinux, checked by maturin's own
#                              auditwheel) into target/wheels (profile release by default)
#   scripts/python.sh test     builds the wheel (profile checked), installs it into a fresh
#                              virtual environment (target/py-wheel-venv) with no cargo on PATH
#                              and runs its tests there (pytest python/tests; the GPU tests as
#                              the Rust ones, failing without an adapter under
#                              VOXCAST_REQUIRE_GPU=1) and examples
#   scripts/python.sh venv     makes target/py-venv with maturin, numpy and pytest only
#   scripts/python.sh install  installs the package into target/py-venv only
#   scripts/python.sh bench    installs it with Open3D and pyoctomap and runs python/bench.py
# Installs what is missing: Debian's python3-venv (apt) where venv is absent, and from PyPI
# maturin, numpy and pytest into the virtual environment. Fails with a clear message, never
# skips, when one cannot be had.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
venv="$root/target/py-venv"
say() { echo "python.sh: $*"; }
die() { echo "python.sh: $*" >&2; exit 1; }

need_venv() {
    [[ -x "$venv/bin/python" ]] && return
    command -v python3 >/dev/null || die "no python3 (Python 3.9 or later is needed)"
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        command -v apt-get >/dev/null || die "python3 has no venv module, and no apt-get to install python3-venv"
        say "installing Debian's python3-venv"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv; } >/dev/null \
            || die "cannot install python3-venv with apt-get"
        python3 -m venv "$venv" || die "cannot make a virtual environment in $venv"
    fi
    say "made a virtual environment in target/py-venv"
}

need_packages() {
    need_venv
    "$venv/bin/pip" install -q "maturin>=1.9,<2" numpy pytest || die "cannot install maturin, numpy and pytest from PyPI"
}

install() {
    need_packages
    say "building and installing the voxcast package (profile ${1:-release})"
    # Built without isolation, with the maturin just installed: the checkout's own target/ is
    # reused (the test suite builds with its `checked` profile, as cargo test does).
    PATH="$venv/bin:$PATH" "$venv/bin/pip" install -q --no-build-isolation --force-reinstall --no-deps \
        --config-settings=build-args="--profile ${1:-release}" ./python \
        || die "cannot build the voxcast package"
}

wheel() {
    need_packages
    local profile=${1:-release}
    say "building the voxcast wheel (profile $profile) into target/wheels"
    rm -rf target/wheels
    # --compatibility pypi: a manylinux tag PyPI accepts; --auditwheel check: fail, rather than
    # bundle, where the library needs a shared library outside the manylinux set.
    PATH="$venv/bin:$PATH" "$venv/bin/maturin" build -m python/Cargo.toml --profile "$profile" \
        --strip --compatibility pypi --auditwheel check --out target/wheels \
        || die "cannot build the voxcast wheel"
    wheel=$(ls target/wheels/voxcast-*-abi3-manylinux*.whl 2>/dev/null | head -n 1)
    [[ -n "$wheel" ]] || die "maturin built no abi3 manylinux wheel: $(ls target/wheels)"
    say "built $wheel"
}

# PATH without any folder that holds cargo or rustc: what a user without Rust has.
path_without_rust() {
    local dir out=""
    local IFS=:
    for dir in $PATH; do
        [[ -x "$dir/cargo" || -x "$dir/rustc" ]] && continue
        out="${out:+$out:}$dir"
    done
    echo "$out"
}

case "${1:-}" in
    venv) need_packages ;;
    install) install release ;;
    wheel) wheel "${2:-release}" ;;
    test)
        wheel checked
        users="$root/target/py-wheel-venv"
        rm -rf "$users"
        bare=$(path_without_rust)
        say "installing $wheel into a fresh virtual environment with no cargo on PATH"
        env PATH="$bare" python3 -m venv "$users" || die "cannot make a virtual environment in $users"
        env PATH="$users/bin:$bare" bash -c '! command -v cargo >/dev/null && ! command -v rustc >/dev/null' \
            || die "cargo is still on PATH for the wheel's test"
        # --only-binary: the package must come from the wheel, never from a source build.
        env PATH="$users/bin:$bare" "$users/bin/pip" install -q --only-binary voxcast "$wheel" pytest \
            || die "cannot install the wheel and pytest"
        # The sample files of fastanvil and dot_vox, found with cargo here, named for the tests.
        packages=$(cargo metadata --format-version 1 | python3 -c 'import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] in ("fastanvil", "dot_vox"):
        print("VOXCAST_PACKAGE_" + p["name"].upper() + "=" + os.path.dirname(p["manifest_path"]))') \
            || die "cannot find fastanvil's and dot_vox's sources with cargo metadata"
        run() { env PATH="$users/bin:$bare" $packages "$users/bin/python" "$@"; }
        # From target/, so that python/voxcast (without its native module) is not on the path.
        (cd target && run -m pytest -q -p no:cacheprovider "$root/python/tests")
        # As a user runs them from inside python/, where the sources sit beside the tests.
        (cd python && run -m pytest -q -p no:cacheprovider tests/test_inputs.py)
        # The examples write their files (the LiDAR sweep on the GPU, its answers the CPU's).
        say "the examples, into target/py-examples"
        run python/examples/lidar_sweep.py --gpu --out-dir target/py-examples
        for f in lidar.ply lidar_range.png lidar_top.png; do
            [[ -s target/py-examples/$f ]] || die "the LiDAR example wrote no $f"
        done
        run python/examples/agent_observations.py --steps 5
        ;;
    bench)
        install release
        "$venv/bin/pip" install -q open3d pyoctomap || die "cannot install open3d and pyoctomap from PyPI"
        "$venv/bin/python" python/bench.py "${@:2}"
        ;;
    *) die "usage: scripts/python.sh test | wheel [PROFILE] | venv | install | bench" ;;
esac
