#!/usr/bin/env bash
# CI entry point: make sure a Vulkan driver (Mesa lavapipe) is present, then run the test suite
# against the real GPU code path.  Intended for a fresh Debian 12 machine, run from the repo root.
set -euo pipefail

start=$SECONDS
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Names a part of the run and when it starts, so that a slow run's log shows where its time went.
phase() {
    local e=$((SECONDS - start))
    printf 'test.sh: %s (at %dm%02ds)\n' "$1" $((e / 60)) $((e % 60))
}

have_icd() {
    local d f
    for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d; do
        for f in "$d"/*.json; do
            [[ -e "$f" ]] && return 0
        done
    done
    return 1
}

have_loader() {
    # wgpu (via ash) dlopens libvulkan.so.1 at runtime
    ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1' \
        || compgen -G '/usr/lib/*/libvulkan.so.1' >/dev/null \
        || compgen -G '/usr/lib/libvulkan.so.1' >/dev/null
}

# wgpu's GL backend dlopens libEGL; Mesa's llvmpipe OpenGL driver is the DRI swrast driver.
have_gl() {
    { ldconfig -p 2>/dev/null | grep -q 'libEGL\.so\.1' || compgen -G '/usr/lib/*/libEGL.so.1' >/dev/null; } \
        && compgen -G '/usr/lib/*/dri/swrast_dri.so' >/dev/null
}

if ! have_icd || ! have_loader || ! have_gl; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: no Vulkan driver/loader found and apt-get is not available;" \
             "install a Vulkan ICD (e.g. Mesa lavapipe) and libvulkan1 manually." >&2
        exit 1
    fi
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
            echo "test.sh: need root (or sudo) to install mesa-vulkan-drivers" >&2; exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    pkgs=(mesa-vulkan-drivers libvulkan1 libegl1 libgl1-mesa-dri)
    # Where some Mesa is installed already, take the Vulkan driver of that same version, so
    # that the install adds packages and upgrades none.
    mesa="$(dpkg-query -W -f='${Version}' libgl1-mesa-dri 2>/dev/null || true)"
    if [[ -n "$mesa" ]] && apt-cache madison mesa-vulkan-drivers | grep -qF "| $mesa |"; then
        pkgs[0]="mesa-vulkan-drivers=$mesa"
        pkgs[3]="libgl1-mesa-dri=$mesa"
    fi
    echo "test.sh: no Vulkan or OpenGL driver found; installing Mesa's software drivers (lavapipe, llvmpipe):"
    $SUDO apt-get install -s --no-install-recommends "${pkgs[@]}" | sed -n 's/^Inst /  apt-get installs /p'
    $SUDO apt-get install -y -q --no-install-recommends "${pkgs[@]}"
fi

# Mesa's Vulkan loader complains when this is unset; give it a private folder.
if [[ -z "${XDG_RUNTIME_DIR:-}" ]]; then
    XDG_RUNTIME_DIR="$(mktemp -d)"
    export XDG_RUNTIME_DIR
fi

# The build needs a few GiB (target/ and cargo's registry); a full disk shows up as a linker
# killed by SIGBUS, so say how much there is before starting.
free_kib="$(df -Pk . 2>/dev/null | awk 'NR == 2 { print $4 }' || true)"
if [[ "$free_kib" =~ ^[0-9]+$ ]]; then
    echo "test.sh: $((free_kib / 1024)) MiB free on the disk of $(pwd)"
    if (( free_kib < 5 * 1024 * 1024 )); then
        echo "test.sh: WARNING: under 5 GiB free; a clean build of the suite writes about 4 GiB" \
             "into target/ and cargo's registry takes about 0.6 GiB" >&2
    fi
fi

# What the Python package's and the page's tests install from the network (a virtual
# environment with maturin, numpy and pytest; Debian's chromium and npm's playwright-core) is
# fetched in the background while the suite builds, one install after another (apt runs once
# at a time); waited for before the Python package's part.
mkdir -p target
tools_log=target/test-tools.log
( ./scripts/python.sh venv && ./scripts/web.sh tools ) >"$tools_log" 2>&1 &
tools_pid=$!
browser_pid=""
stop_tree() {
    local child
    [[ -n "$1" ]] || return 0
    for child in $(pgrep -P "$1" 2>/dev/null); do stop_tree "$child"; done
    kill "$1" 2>/dev/null || true
}
trap 'stop_tree "$tools_pid"; stop_tree "$browser_pid"' EXIT

export VOXCAST_REQUIRE_GPU=1
export WGPU_BACKEND="${WGPU_BACKEND:-vulkan}"
if [[ -z "${WGPU_ADAPTER_NAME:-}" && "${CI:-}" == "true" ]]; then
    export WGPU_ADAPTER_NAME=llvmpipe
fi
echo "test.sh: VOXCAST_REQUIRE_GPU=$VOXCAST_REQUIRE_GPU WGPU_BACKEND=$WGPU_BACKEND WGPU_ADAPTER_NAME=${WGPU_ADAPTER_NAME:-<unset>}"

# The fuzz targets' corpus (fuzz/corpus) replays in tests/fuzz_replay.rs, on this stable
# toolchain; fuzzing itself needs nightly and runs apart: scripts/fuzz.sh.
echo "test.sh: the fuzz corpus replays through tests/fuzz_replay.rs (stable); to fuzz: scripts/fuzz.sh (nightly)"
# fuzz/ is a workspace of its own with its own lock file: it must already name every package
# its targets build (the testkit's dependencies included), so that fuzzing rewrites nothing.
if ! cargo metadata --locked --manifest-path fuzz/Cargo.toml --format-version 1 >/dev/null; then
    echo "test.sh: fuzz/Cargo.lock is out of date: run \`cargo metadata --manifest-path fuzz/Cargo.toml --format-version 1 >/dev/null\` (it adds the missing packages and upgrades none) and commit it" >&2
    exit 1
fi
# Every crate of the workspace: voxcast, the Bevy plugin (voxcast-bevy) and the importers
# (voxcast-import, whose tests read the files fastanvil and dot_vox ship in their packages).
# The `checked` profile is release with overflow checks (see Cargo.toml).
# --all-targets: lib, bins, tests, examples, and benches (built in test mode, run quickly); no doctests
# The modules of src/ depend on each other one way (no import cycle).
./scripts/check_layers.sh
phase "building the test suite"
cargo test --workspace --profile checked --all-targets --no-run

# The browser's part builds beside the tests below, at the lowest CPU priority: the GPU tests
# leave a core idle for minutes while lavapipe compiles shaders. voxcast (with and without its
# GPU side) and the Bevy plugin for wasm32, wasm-bindgen-cli, and the page (scripts/web.sh
# installs what it needs). Its own target directories (wasm32, and the host's debug and
# release for build scripts) are not the `checked` ones the tests use, so no build waits on
# another. Checked before the page's test at the end; stopped if this script stops first.
browser_log=target/test-browser-builds.log
browser_builds() {
    rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
    # voxcast-bevy's build builds voxcast with its GPU side (its default) for wasm32 too.
    cargo build -q --target wasm32-unknown-unknown -p voxcast --no-default-features
    cargo build -q --target wasm32-unknown-unknown -p voxcast-bevy
    # A Bevy app's line of sight on the GPU as a web game makes it (the raycaster awaited).
    cargo build -q --target wasm32-unknown-unknown -p voxcast-bevy --example web_sight
    # The API docs as a web app's author reads them: no link to a native-only item.
    RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps --target wasm32-unknown-unknown -p voxcast
    ./scripts/web.sh build
}
( renice -n 19 "$BASHPID" >/dev/null; browser_builds ) >"$browser_log" 2>&1 &
browser_pid=$!

# The criterion benches run once each as tests, on three of their nine workloads (building
# every workload's world and peers takes a minute); `cargo bench` times them all.
phase "the test suite"
VOXCAST_BENCH_WORKLOADS=w1,w3,w9 cargo test --workspace --profile checked --all-targets
# doctests are not part of --all-targets
phase "the doctests"
cargo test --workspace --profile checked --doc

# voxcast without its GPU side (`default-features = false`): no wgpu or naga in its tree, and
# the CPU tests pass (the GPU test files compile to nothing there).
gpu_crates="$(cargo tree -p voxcast --no-default-features -e normal --prefix none | grep -E '^(wgpu|naga) ' || true)"
if [[ -n "$gpu_crates" ]]; then
    echo "test.sh: voxcast without the gpu feature still depends on: $gpu_crates" >&2
    exit 1
fi
phase "voxcast and voxcast-bevy without their GPU side"
cargo test -p voxcast --no-default-features --profile checked --lib --tests

# The Bevy plugin without its `gpu` feature: no wgpu or naga in its tree either (its Bevy
# crates bring none), and its CPU tests pass (the GPU test files compile to nothing there).
gpu_crates="$(cargo tree -p voxcast-bevy --no-default-features -e normal --prefix none | grep -E '^(wgpu|naga) ' || true)"
if [[ -n "$gpu_crates" ]]; then
    echo "test.sh: voxcast-bevy without the gpu feature still depends on: $gpu_crates" >&2
    exit 1
fi
cargo test -p voxcast-bevy --no-default-features --profile checked --lib --tests

# Another shader compiler: wgpu's GL backend runs the shader through naga's GLSL output on
# Mesa's llvmpipe OpenGL. A short part of the parity suite (rays, cameras, sight, agents,
# sensors, box casts, shapes) and the demo, which fails if a pixel differs from the CPU reference.
phase "the parity suite's short part on WGPU_BACKEND=gl"
# (--workspace here and below: the features the whole workspace's build above resolved, so that
# nothing is compiled again.)
WGPU_BACKEND=gl cargo test --workspace --profile checked \
    --test gpu_parity --test gpu_sight --test gpu_agents --test gpu_sensors --test gpu_boxes -- \
    parity_every_option parity_camera_rays_made_in_the_shader parity_line_of_sight_both_modes \
    parity_of_sight agent_visibility_equals_the_cpu_under_every_option \
    sensors_match_the_cpu_on_terrain sensors_under_every_option gpu_box_casts_equal_the_cpu \
    parity_of_rays_given_relative_to_the_window parity_with_shapes
cargo build --workspace --profile checked --examples
examples=target/checked/examples
WGPU_BACKEND=gl "$examples/depth_image" --width 320 --height 180 --out-dir "$(mktemp -d)"

# Worlds nobody here made: fastanvil's 1.19.4 region and dot_vox's axes model, rendered and
# cast on the GPU, every pixel and ray checked against the CPU reference (exit 1 otherwise).
phase "the importers' examples on the files fastanvil and dot_vox ship"
"$examples/minecraft" --width 320 --height 180 --out-dir "$(mktemp -d)"
"$examples/magica" --width 320 --height 240 --out-dir "$(mktemp -d)"

# Picking without a window: a cursor position, the camera's transform and projection, through
# voxcast-bevy's `viewport_ray` (exit 1 when the centre of the view is not the targeted block).
phase "voxcast-bevy's picking example, and its web_sight example natively"
"$examples/picking"
# Line of sight on the GPU with the raycaster handed over from where it was made (exit 1 when
# the GPU answered no batch or an answer differs from the CPU reference's).
"$examples/web_sight"

# Python: the package in python/ built as the wheel users install (abi3, manylinux, checked by
# maturin's auditwheel), installed into a fresh virtual environment with no cargo on PATH, and
# its pytest suite there, the GPU tests on lavapipe as above (scripts/python.sh installs what
# it needs).
phase "the Python package and its tests"
tools_ok=0
wait "$tools_pid" || tools_ok=$?
tools_pid=""   # ended: its number may be reused, so the exit trap must not stop it
if (( tools_ok != 0 )); then
    cat "$tools_log" >&2
    echo "test.sh: installing the Python and browser tools failed (their log above, also in $tools_log)" >&2
    exit 1
fi
cat "$tools_log"
./scripts/python.sh test

# The browser: voxcast (with and without its GPU side) and the Bevy plugin build for wasm32,
# and the demo page passes its test in headless Chromium, with WebGPU (SwiftShader) and
# without: parity in the page against the CPU reference and the native digest, a click that
# breaks a block, the size limits, a killed GPU process, the CPU fallback (scripts/web.sh
# installs what it needs; its builds ran in the background above).
phase "voxcast and voxcast-bevy for wasm32, and the page in headless Chromium"
browser_ok=0
wait "$browser_pid" || browser_ok=$?
browser_pid=""
if (( browser_ok != 0 )); then
    cat "$browser_log" >&2
    echo "test.sh: the browser's builds failed (their log above, also in $browser_log)" >&2
    exit 1
fi
cat "$browser_log"
# The native digest of the page's parity suite, written by web/tests/suite.rs above.
web_target=$(./scripts/web.sh target-dir)
VOXCAST_NATIVE_DIGEST="$(cat "$web_target/tmp/voxcast-web-digest")" ./scripts/web.sh test
# The page's script builds where cargo builds: CARGO_TARGET_DIR (and build.target-dir) honoured.
elsewhere="$(mktemp -d)/elsewhere"
[[ "$(CARGO_TARGET_DIR="$elsewhere" ./scripts/web.sh target-dir)" == "$elsewhere" ]] \
    || { echo "test.sh: scripts/web.sh does not build into CARGO_TARGET_DIR" >&2; exit 1; }

elapsed=$((SECONDS - start))
printf 'test.sh: all tests passed in %dm%02ds\n' $((elapsed / 60)) $((elapsed % 60))
