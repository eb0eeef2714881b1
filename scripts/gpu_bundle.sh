#!/usr/bin/env bash
# Packs voxcast's GPU checks for a Linux x86-64 machine that has a GPU and its driver but no
# Rust toolchain.
#
#   ./scripts/gpu_bundle.sh [bundle-dir] [--with-loader]      (default bundle-dir: .gpu-bundle)
#
# Builds the GPU test binaries (the `checked` profile, as scripts/test.sh runs them), the
# examples depth_image, npc_line_of_sight and bench_report (release), strips them and writes
# into bundle-dir: bins.tar.xz, corpus.tar.gz (the fuzz corpus, which fuzz_replay reads at the
# path it was built with), built_at.txt and run.sh (scripts/gpu_bundle_run.sh). With
# --with-loader it also downloads the Vulkan loader (libvulkan1) into bundle-dir/debs/, which
# run.sh unpacks first on a machine without one. The bundle is ignored by git (.gitignore).
#
# There: bash bundle-dir/run.sh LOGDIR   (about eight minutes; see scripts/gpu_bundle_run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle loader=0
for a in "$@"; do
  case $a in
    --with-loader) loader=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) out=$a ;;
  esac
done
mkdir -p "$out" && out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/vcbins"
echo "gpu_bundle: building the GPU test binaries (checked profile) ..."
# Test targets whose names start with gpu, spec, fuzz or exit (the child-process exit test);
# the Bevy crate's get a bevy_ prefix.
cargo test --workspace --profile checked --all-targets --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("reason") != "compiler-artifact" or not j.get("executable"):
        continue
    name, kinds = j["target"]["name"], j["target"]["kind"]
    if not j["profile"].get("test") or "test" not in kinds:
        continue
    if not name.startswith(("gpu", "spec", "fuzz", "exit")):
        continue
    # Tests of voxcast-import read files from the Cargo packages, which the machine has not.
    if "voxcast-import" in j["package_id"] or "voxcast_import" in j["package_id"]:
        continue
    bevy = "voxcast-bevy" in j["package_id"] or "voxcast_bevy" in j["package_id"]
    print(("bevy_" if bevy else "") + name, j["executable"])
' > "$stage/tests.txt"
[ -s "$stage/tests.txt" ] || { echo "gpu_bundle: no test binaries found" >&2; exit 1; }
while read -r name exe; do strip -o "$stage/vcbins/$name" "$exe"; done < "$stage/tests.txt"
echo "gpu_bundle: building the examples (release) ..."
cargo build --release --quiet --example depth_image --example npc_line_of_sight --example bench_report
for e in depth_image npc_line_of_sight bench_report; do
  strip -o "$stage/vcbins/$e" "target/release/examples/$e"
done
ls "$stage/vcbins"
(cd "$stage" && tar -cJf "$out/bins.tar.xz" vcbins)
[ -d fuzz/corpus ] && tar -czf "$out/corpus.tar.gz" -C fuzz corpus
# bench_report's W7 reads fastanvil's 1.19.4 region; the run script names it (VOXCAST_W7_REGION).
region=$(cargo metadata --format-version 1 2>/dev/null | python3 -c '
import json, sys, os
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "fastanvil":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "resources", "1.19.4.mca"))
' || true)
[ -n "$region" ] && [ -f "$region" ] && cp "$region" "$out/w7-region.mca"
pwd > "$out/built_at.txt"
cp scripts/gpu_bundle_run.sh "$out/run.sh" && chmod +x "$out/run.sh"
if [ $loader = 1 ]; then
  mkdir -p "$out/debs"
  (cd "$out/debs" && apt-get download libvulkan1)
fi
du -sh "$out"
