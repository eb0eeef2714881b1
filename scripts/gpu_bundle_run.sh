#!/bin/bash
# Runs the checks packed by scripts/gpu_bundle.sh on a machine with a GPU:
#
#   bash run.sh [LOGDIR]          (default: $OUT if set, else ./gpu-check-out)
#
# Every log goes to LOGDIR: machine.txt (GPU, cores, system), summary.txt (each step's exit
# status and time), demo.log (depth_image, whose every pixel is checked against the CPU, and
# npc_line_of_sight), tests.log (parity, spec-variant, sensor, agent and other GPU tests, the
# fuzz corpus replay, the exit test), bench.log (bench_report: the full run, W1 and W2 with rays
# set up on the host, then 4 M rays) and
# shaded.png. Each step has a time limit, and no step starts after DEADLINE seconds (480).
# GPU tests fail, rather than skip, without an adapter (VOXCAST_REQUIRE_GPU=1).
set -u
cd "$(dirname "$0")"
logs=${1:-${OUT:-./gpu-check-out}}
mkdir -p "$logs"
T0=$SECONDS DEADLINE=${DEADLINE:-480}
# A Vulkan loader brought along (gpu_bundle.sh --with-loader) for machines without one.
for f in debs/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
command -v ldconfig >/dev/null && ldconfig
work=$(mktemp -d)
tar -xJf bins.tar.xz -C "$work" 2>/dev/null \
  || python3 -c "import tarfile, sys; tarfile.open('bins.tar.xz').extractall(sys.argv[1])" "$work" \
  || { echo "cannot unpack bins.tar.xz"; exit 1; }
B=$work/vcbins
built=$(cat built_at.txt 2>/dev/null || true)
[ -n "$built" ] && [ -f corpus.tar.gz ] && mkdir -p "$built/fuzz" && tar -xzf corpus.tar.gz -C "$built/fuzz"
export XDG_RUNTIME_DIR=$(mktemp -d) WGPU_BACKEND=${WGPU_BACKEND:-vulkan} VOXCAST_REQUIRE_GPU=1 RUST_BACKTRACE=1
# bench_report's W7 region (skipped, saying so, where the bundle has none).
[ -f w7-region.mca ] && export VOXCAST_W7_REGION=$PWD/w7-region.mca
# NVIDIA containers may carry the driver's ICD file outside the loader's search path.
if ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
  for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do [ -f "$j" ] && export VK_DRIVER_FILES=$j; done
fi
{ nvidia-smi -L 2>/dev/null; lscpu 2>/dev/null | grep -m1 'Model name'; nproc; head -2 /etc/os-release; date -u
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"; } > "$logs/machine.txt" 2>&1
: > "$logs/summary.txt"
step() {
  local name=$1 t=$2
  shift 2
  local left=$((DEADLINE - (SECONDS - T0)))
  if [ $left -lt 15 ]; then echo "$name skipped (deadline)" >> "$logs/summary.txt"; return; fi
  [ $t -gt $left ] && t=$left
  local s=$SECONDS
  echo "=== $name"
  timeout $t "$@"
  local rc=$?
  echo "=== $name rc=$rc in $((SECONDS - s))s"
  echo "$name rc=$rc $((SECONDS - s))s" >> "$logs/summary.txt"
}
img=$(mktemp -d)
{ step depth_720 40 $B/depth_image --out-dir "$img"; } > "$logs/demo.log" 2>&1
cp "$img/shaded.png" "$logs/shaded.png" 2>/dev/null
{ for t in $(ls $B | grep -E '^(gpu_parity|gpu_device|gpu_sensors|spec)'); do step $t 90 $B/$t --test-threads 8; done; } > "$logs/tests.log" 2>&1
{ step bench_full 150 $B/bench_report; } > "$logs/bench.log" 2>&1
# The full run sets uploaded rays up in the shader on a GPU (RaySetup::Auto); the other way here.
{ step bench_setup_host 60 $B/bench_report --workload w1,w2 --ray-setup host; } >> "$logs/bench.log" 2>&1
# The exit tests run child processes of themselves and take no test-harness arguments.
{ for t in $(ls $B | grep -E '^(gpu|bevy_|fuzz)' | grep -vE '^(gpu_parity|gpu_device|gpu_sensors|(bevy_)?exit.*)$'); do
    step $t 60 $B/$t --test-threads 8; done
  for t in $(ls $B | grep -E '^(bevy_)?exit'); do step $t 60 $B/$t; done; } >> "$logs/tests.log" 2>&1
{ step depth_1080 40 $B/depth_image --width 1920 --height 1080 --out-dir "$img"
  step npc 40 $B/npc_line_of_sight; } >> "$logs/demo.log" 2>&1
{ step bench_big 100 $B/bench_report --rays 4000000 --workload w1,w2,w3,w4,w6 --repeats 5; } >> "$logs/bench.log" 2>&1
echo "total $((SECONDS - T0))s" >> "$logs/summary.txt"
cat "$logs/summary.txt"
grep -hE "differ|adapter:|self-check|test result|panicked" "$logs/demo.log" "$logs/tests.log" | head -40
grep -hE "voxcast gpu|kernel|host ceiling" "$logs/bench.log" | head -30
