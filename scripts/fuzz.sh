#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer) of the fuzz targets in fuzz/: each target
# runs for the given time, one job, at the lowest CPU priority, starting from and adding to
# fuzz/corpus/<target>/. Crashes and mismatches land in fuzz/artifacts/<target>/; turn each
# into a regression (fuzz/regressions/<target>/ and a named test in tests/) before fixing it.
#
#   scripts/fuzz.sh [-t SECONDS] [TARGET...]   fuzz each TARGET (default: all) for SECONDS (300)
#   scripts/fuzz.sh --cmin [TARGET...]          shrink each corpus to a smallest set of inputs
#                                               that keeps its coverage (set-cover merge)
#
# Targets: raycast, shapes, edits, grid, camera, boxcast, gpu (the GPU batch on lavapipe, a Vulkan driver
# that scripts/test.sh installs). Needs a nightly toolchain (`rustup toolchain install
# nightly`); cargo-fuzz is installed from crates.io when missing. The corpus replays on stable
# in tests/fuzz_replay.rs, which scripts/test.sh runs.
set -euo pipefail
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
cd "$(dirname "$self")/../fuzz"

seconds=300
cmin=0
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        -t) seconds="$2"; shift 2 ;;
        --cmin) cmin=1; shift ;;
        -h|--help) sed -n '2,13p' "$self"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(raycast shapes edits grid camera boxcast gpu)

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo fuzz needs a nightly toolchain: rustup toolchain install nightly" >&2
    exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz from crates.io..."
    cargo install --locked cargo-fuzz
fi

# No sanitizer (the code forbids unsafe), overflow checks and debug assertions on, and no
# comparison tracing: the inputs are decoded by structure, and tracing cost half the speed.
flags=(-s none --debug-assertions --no-trace-compares)
# The GPU target on lavapipe, one thread, failing if no adapter is found.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
export WGPU_BACKEND="${WGPU_BACKEND:-vulkan}" VOXCAST_REQUIRE_GPU=1 LP_NUM_THREADS=1 RAYON_NUM_THREADS=1

for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    if [[ $cmin -eq 1 ]]; then
        # `cargo fuzz cmin` keeps every input that adds a feature; the set-cover merge keeps
        # a smallest set with the same features (about half as many inputs).
        cargo +nightly fuzz build "${flags[@]}" "$t"
        bin="target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release/$t"
        min="$(mktemp -d)"
        nice -n 19 "$bin" -set_cover_merge=1 -rss_limit_mb=8192 -timeout=120 "$min" "corpus/$t"
        echo "fuzz.sh: corpus/$t: $(ls "corpus/$t" | wc -l) inputs -> $(ls "$min" | wc -l)"
        rm -rf "corpus/$t"
        mv "$min" "corpus/$t"
        continue
    fi
    echo "fuzz.sh: fuzzing $t for ${seconds}s"
    nice -n 19 cargo +nightly fuzz run "${flags[@]}" "$t" -- \
        -max_total_time="$seconds" -max_len=2048 -timeout=120 -rss_limit_mb=8192 \
        -print_final_stats=1
done
