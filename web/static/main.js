// The demo page: one voxcast batch a frame on WebGPU (or the CPU reference without it).
// Every call into the module goes through `run`, one at a time: the module lends its state
// to one call at a time.
import init, { Demo } from './voxcast_web.js';

const $ = (id) => document.getElementById(id);
const canvas = $('view');
const ctx = canvas.getContext('2d');
let demo = null;
let chain = Promise.resolve();
// A call that fails (a lost device, a world the GPU cannot hold) says so on the page, until
// a frame is drawn again.
let failed = false;
const fail = (e) => { $('notice').textContent = `voxcast: ${e?.message ?? e}`; failed = true; };
const run = (f) => {
  const done = chain.then(f, f);
  chain = done.catch(fail);
  return done;
};

async function draw() {
  const rgba = await demo.render();
  const image = new ImageData(new Uint8ClampedArray(rgba.buffer), canvas.width, canvas.height);
  ctx.putImageData(image, 0, 0);
  if (failed) {
    $('notice').textContent = '';
    failed = false;
  }
  const ms = demo.last_ms();
  const pixels = canvas.width * canvas.height;
  $('rate').textContent = `${(pixels / ms / 1000).toFixed(2)} M rays/s ` +
    `(${pixels.toLocaleString('en-US')} pixels in ${ms.toFixed(1)} ms, ` +
    `${demo.on_gpu() ? 'GPU' : 'CPU reference'})`;
  // Every frame is checked on a sample of its pixels; `check` compares them all.
  const [differ, compared] = demo.check_sample(97);
  $('check').textContent = `this frame: ${differ.toLocaleString('en-US')} of a sample of ` +
    `${compared.toLocaleString('en-US')} pixels differ from the CPU reference`;
  $('status').dataset.sampleDiffer = String(differ);
}

function check() {
  const [differ, pixels] = demo.check_frame();
  $('check').textContent = `${differ.toLocaleString('en-US')} of ${pixels.toLocaleString('en-US')} pixels differ from the CPU reference`;
  return { differ, pixels };
}

// A frame is wanted (`dirty`) from when a camera move is applied until a draw queued after it
// starts. Moves call `redraw` when they are applied, in the chain of calls: a draw that was
// already queued ran before them, so a later one is queued for them.
let dirty = false;
function redraw() {
  if (dirty) return;
  dirty = true;
  requestAnimationFrame(() => run(async () => { dirty = false; await draw(); }));
}
const move = (...by) => run(async () => { demo.move_by(...by); redraw(); });

// The picture's size: the module's and the canvas's change together, and the next frame is
// drawn at it. A size the page does not render is refused with its reason; nothing changes.
// `applySize` runs inside a call of the chain; `resize` queues one.
async function applySize(w, h) {
  try {
    demo.resize(w, h);
  } catch (e) {
    return String(e.message ?? e);
  }
  canvas.width = w;
  canvas.height = h;
  await draw();
  return 'ok';
}
const resize = (w, h) => run(() => applySize(w, h));
// The canvas follows the window's width (16:9, at most 1280x720), the last size wanted once
// the calls before it are done.
let wanted = null;
function fitWindow() {
  const w = Math.max(160, Math.min(1280, Math.floor(window.innerWidth - 40)));
  const size = [w, Math.round(w * 9 / 16)];
  const queued = wanted !== null;
  wanted = size;
  if (queued) return;
  run(async () => {
    const [ww, wh] = wanted;
    wanted = null;
    if (ww !== canvas.width || wh !== canvas.height) await applySize(ww, wh);
  });
}

async function main() {
  await init();
  const webgpu = !!navigator.gpu;
  // The browser's own description of its adapter, where it gives one.
  const info = webgpu ? (await navigator.gpu.requestAdapter())?.info : null;
  const described = info && [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
  // A software adapter (SwiftShader: Vulkan on the CPU) renders slower than the CPU reference
  // in this page, so the CPU renders there unless `?gpu` asks.
  const software = !!info && (info.isFallbackAdapter === true || /swiftshader/i.test(described));
  const forced = new URLSearchParams(location.search).has('gpu');
  const useGpu = webgpu && (!software || forced);
  window.voxcastSoftware = software;
  try {
    demo = await Demo.create(canvas.width, canvas.height, useGpu);
  } catch (e) {
    $('notice').textContent = `voxcast could not start: ${e.message ?? e}`;
    $('status').dataset.ready = 'failed';
    return;
  }
  let name = demo.adapter();
  if (demo.on_gpu() && described) name += `: ${described}`;
  $('adapter').textContent = name;
  if (software && !useGpu) {
    $('notice').textContent = `A software WebGPU adapter here (${described}): the CPU reference ` +
      'renders this page, faster on it. Add ?gpu to the address to render on the adapter.';
  } else if (!demo.on_gpu()) {
    $('notice').textContent = `No WebGPU here: the CPU reference renders this page (${demo.adapter()}).`;
  }
  await run(draw);
  await run(async () => check());
  $('status').dataset.ready = 'yes';
  window.addEventListener('resize', fitWindow);

  const keys = { KeyW: [2, 0, 0], KeyS: [-2, 0, 0], KeyD: [0, 2, 0], KeyA: [0, -2, 0],
    KeyR: [0, 0, 2], KeyF: [0, 0, -2] };
  const turns = { ArrowLeft: [-0.05, 0], ArrowRight: [0.05, 0], ArrowUp: [0, 0.05], ArrowDown: [0, -0.05] };
  canvas.addEventListener('keydown', (e) => {
    const m = keys[e.code], t = turns[e.code];
    if (!m && !t) return;
    e.preventDefault();
    move(...(m ?? [0, 0, 0]), ...(t ?? [0, 0]));
  });
  let drag = null, moved = false;
  canvas.addEventListener('mousedown', (e) => { drag = [e.clientX, e.clientY]; moved = false; canvas.focus(); });
  window.addEventListener('mouseup', () => { drag = null; });
  canvas.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag[0], dy = e.clientY - drag[1];
    if (Math.abs(dx) + Math.abs(dy) < 3) return;
    moved = true;
    drag = [e.clientX, e.clientY];
    move(0, 0, 0, dx * 0.004, -dy * 0.004);
  });
  canvas.addEventListener('click', (e) => {
    if (moved) return;
    const r = canvas.getBoundingClientRect();
    const x = Math.floor((e.clientX - r.left) * canvas.width / r.width);
    const y = Math.floor((e.clientY - r.top) * canvas.height / r.height);
    run(async () => {
      const changed = await demo.click(x, y, e.shiftKey);
      $('status').dataset.last = changed ?? '';
      await draw();
      $('status').dataset.clicks = String(Number($('status').dataset.clicks ?? 0) + 1);
    });
  });
  // For the page's tests: the parity suite and the frame check, run in turn with the rest.
  window.voxcast = {
    parity: () => run(async () => JSON.parse(await demo.parity())),
    check: () => run(async () => check()),
    resize: (w, h) => resize(w, h),
    // A call that fails, as a lost frame would: its notice shows until the next good frame.
    failOnce: () => {
      const why = 'a frame that failed (a test of the notice)';
      run(async () => { throw new Error(why); });
      return run(async () => why);
    },
    size: () => [canvas.width, canvas.height],
    // Bytes of the module's memory (WebAssembly memory grows and never shrinks).
    memory: () => run(async () => demo.memory_bytes()),
    onGpu: () => run(async () => demo.on_gpu()),
    software: () => window.voxcastSoftware,
    // A world larger than the device's storage limit: refused, its message on the page.
    oversizedWorld: () => run(async () => { const why = demo.upload_oversized_window(); $('notice').textContent = `voxcast: ${why}`; return why; }),
    redraw: () => run(draw),
    // Whether every applied move has been drawn (no frame wanted, none queued before this).
    drawn: () => run(async () => !dirty),
  };
}

main().catch((e) => {
  $('notice').textContent = `voxcast failed: ${e.message ?? e}`;
  $('status').dataset.ready = 'failed';
});
