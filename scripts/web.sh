#!/usr/bin/env bash
# voxcast in the browser.
#   scripts/web.sh build          builds the page into TARGET/web/site (wasm32 + wasm-bindgen),
#                                 and the web app template (templates/web-app) into site/app
#   scripts/web.sh serve [PORT]   builds it and serves it on http://127.0.0.1:PORT (default 8731)
#   scripts/web.sh tools          installs the browser and Playwright only (what `test` needs)
#   scripts/web.sh target-dir     prints TARGET: cargo's target directory (CARGO_TARGET_DIR or
#                                 build.target-dir where set, else target/)
#   scripts/web.sh test           builds it and tests it in headless Chromium (Playwright):
#                                 parity in the page, click-to-break, a screenshot, the size
#                                 limits, a killed GPU process, CPU fallback; the template's
#                                 batch against the CPU
#                                 (VOXCAST_NATIVE_DIGEST: the native digest, if computed already)
# Installs what is missing: the wasm32 target (rustup), wasm-bindgen-cli at the version of
# Cargo.lock (into TARGET/web-tools), Debian's chromium (apt) and npm's playwright-core (into
# TARGET/web-tools). Fails with a clear message, never skips, when one cannot be had.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
say() { echo "web.sh: $*"; }
die() { echo "web.sh: $*" >&2; exit 1; }
# Cargo's own answer, so that CARGO_TARGET_DIR and a configured build.target-dir are honoured.
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])') \
    || die "cannot ask cargo for its target directory (cargo metadata)"
out="$target/web"
tools="$target/web-tools"

need_wasm() {
    rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown && return
    say "installing the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown || die "cannot install the wasm32-unknown-unknown target with rustup"
}

need_bindgen() {
    local v
    v=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
    [[ -n "$v" ]] || die "no wasm-bindgen in Cargo.lock"
    if ! "$tools/bin/wasm-bindgen" --version 2>/dev/null | grep -qF " $v"; then
        say "installing wasm-bindgen-cli $v (the version of Cargo.lock) into $tools"
        # Not --locked: a locked dependency of the CLI is missing from some registries.
        # --debug: it compiles in about two thirds of the time, and still binds the page in
        # about two seconds.
        cargo install -q --debug wasm-bindgen-cli --version "$v" --root "$tools" \
            || die "cannot install wasm-bindgen-cli $v"
    fi
}

need_browser() {
    if ! command -v chromium >/dev/null; then
        command -v apt-get >/dev/null || die "no chromium, and no apt-get to install it"
        say "installing Debian's chromium"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >/dev/null \
            || die "cannot install chromium with apt-get"
    fi
    if [[ ! -d "$tools/node_modules/playwright-core" ]]; then
        command -v npm >/dev/null || die "no npm to install playwright-core"
        say "installing npm's playwright-core into $tools"
        mkdir -p "$tools"
        (cd "$tools" && { [[ -f package.json ]] || npm init -y >/dev/null; } && npm install --silent playwright-core) \
            || die "cannot install playwright-core with npm"
    fi
}

build() {
    need_wasm
    need_bindgen
    say "building voxcast-web for wasm32-unknown-unknown"
    cargo build -q --release --target wasm32-unknown-unknown -p voxcast-web
    local wasm="$target/wasm32-unknown-unknown/release/voxcast_web.wasm"
    [[ -f "$wasm" ]] || die "cargo built no $wasm"
    # Bound into a fresh folder that replaces the site only once it is complete.
    rm -rf "$out/site.new" && mkdir -p "$out/site.new"
    "$tools/bin/wasm-bindgen" --target web --no-typescript --out-dir "$out/site.new" "$wasm" \
        || die "wasm-bindgen failed on $wasm"
    cp web/static/index.html web/static/main.js "$out/site.new/"
    # The template of a web app (templates/web-app), served beside the page at app/.
    say "building the web app template (templates/web-app) for wasm32-unknown-unknown"
    cargo build -q --release --target wasm32-unknown-unknown -p voxcast-web-app
    local app="$target/wasm32-unknown-unknown/release/voxcast_web_app.wasm"
    [[ -f "$app" ]] || die "cargo built no $app"
    "$tools/bin/wasm-bindgen" --target web --no-typescript --out-dir "$out/site.new/app" "$app" \
        || die "wasm-bindgen failed on $app"
    cp templates/web-app/index.html "$out/site.new/app/"
    rm -rf "$out/site" && mv "$out/site.new" "$out/site"
    say "built $out/site ($(du -sh "$out/site" | cut -f1))"
}

serve() {
    local port=${1:-8731}
    say "serving on http://127.0.0.1:$port (Ctrl-C stops)"
    exec python3 -m http.server "$port" --bind 127.0.0.1 --directory "$out/site"
}

test_page() {
    need_browser
    local port=8732 digest
    say "the native build's digest of the parity suite's CPU answers"
    if [[ -n "${VOXCAST_NATIVE_DIGEST:-}" ]]; then
        digest=$VOXCAST_NATIVE_DIGEST   # computed by web/tests/suite.rs (scripts/test.sh)
    else
        digest=$(cargo run -q --profile checked -p voxcast-web --example digest)
    fi
    say "native: $digest"
    python3 -m http.server "$port" --bind 127.0.0.1 --directory "$out/site" >/dev/null 2>&1 &
    server=$!
    trap 'kill "$server" 2>/dev/null || true' EXIT
    for _ in $(seq 50); do
        python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break
        sleep 0.2
    done
    # Run from TARGET/web-tools, where node finds playwright-core.
    cp web/check.mjs "$tools/check.mjs"
    timeout 900 node "$tools/check.mjs" "http://127.0.0.1:$port/index.html" \
        "${digest%% *}" "$out"
}

case "${1:-}" in
    build) build ;;
    serve) build; serve "${2:-}" ;;
    tools) need_browser ;;
    target-dir) echo "$target" ;;
    test) build; test_page ;;
    *) die "usage: scripts/web.sh build | serve [PORT] | tools | target-dir | test" ;;
esac
