#!/usr/bin/env bash
# voxcast from Python (the package in python/).
#   scripts/python.sh test     installs the package into target/py-venv and runs its tests
#                              (pytest python/tests; the GPU tests as the Rust ones, failing
#                              without an adapter under VOXCAST_REQUIRE_GPU=1) and examples
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

case "${1:-}" in
    venv) need_packages ;;
    install) install release ;;
    test)
        install checked
        # From target/, so that python/voxcast (without its native module) is not on the path.
        (cd target && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests")
        # As a user runs them from inside python/, where the sources sit beside the tests.
        (cd python && "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_inputs.py)
        # The examples write their files (the LiDAR sweep on the GPU, its answers the CPU's).
        say "the examples, into target/py-examples"
        "$venv/bin/python" python/examples/lidar_sweep.py --gpu --out-dir target/py-examples
        for f in lidar.ply lidar_range.png lidar_top.png; do
            [[ -s target/py-examples/$f ]] || die "the LiDAR example wrote no $f"
        done
        "$venv/bin/python" python/examples/agent_observations.py --steps 5
        ;;
    bench)
        install release
        "$venv/bin/pip" install -q open3d pyoctomap || die "cannot install open3d and pyoctomap from PyPI"
        "$venv/bin/python" python/bench.py "${@:2}"
        ;;
    *) die "usage: scripts/python.sh test | venv | install | bench" ;;
esac
