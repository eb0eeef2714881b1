// The page's test in headless Chromium (Playwright, Debian's chromium): the web app
// template's batch against the CPU, parity in the page,
// click-to-break, a screenshot, the size limits, a killed GPU process, keys pressed during
// frames, a software adapter left to the CPU (the GPU checks load URL?gpu, which renders on
// one), and the CPU fallback without WebGPU.
// Usage: node check.mjs URL NATIVE_DIGEST OUT_DIR   (run by `scripts/web.sh test`)
import { chromium } from 'playwright-core';
import { writeFileSync } from 'node:fs';

const [url, nativeDigest, outDir] = process.argv.slice(2);
let failures = 0;
const ok = (cond, what) => {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures += 1;
};

async function open(webgpu, query = '') {
  const args = ['--headless=new', '--no-sandbox', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'];
  if (webgpu) args.push('--enable-unsafe-webgpu');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args, headless: true });
  const page = await browser.newPage({ viewport: { width: 1320, height: 900 } });
  page.on('console', (m) => { if (m.type() === 'error') console.log('console:', m.text()); });
  page.on('pageerror', (e) => console.log('page error:', e.message));
  await page.goto(url + query);
  await page.waitForFunction(() => document.getElementById('status').dataset.ready !== 'no', null, { timeout: 300000 });
  return { browser, page };
}

const canvasPixels = (page) => page.evaluate(() => {
  const c = document.getElementById('view');
  return Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data);
});

// The web app template (templates/web-app, served at app/): its batch, awaited on the
// browser's GPU, equals the CPU's answers.
{
  const args = ['--headless=new', '--no-sandbox', '--no-first-run', '--enable-unsafe-webgpu'];
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args, headless: true });
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.log('app page error:', e.message));
  await page.goto(new URL('app/index.html', url).href);
  await page.waitForFunction(() => document.getElementById('out').dataset.done !== 'no', null, { timeout: 300000 });
  const text = await page.textContent('#out');
  console.log(`web app template: ${text}`);
  ok(await page.evaluate(() => document.getElementById('out').dataset.done) === 'yes' && /^0 of 4096 answers differ/.test(text),
    'the web app template\'s GPU batch equals the CPU\'s answers');
  await browser.close();
}

// With WebGPU, asked for by ?gpu even on a software adapter: the GPU renders, the frame and
// the parity suite match the CPU reference.
{
  const { browser, page } = await open(true, '?gpu');
  ok(await page.evaluate(() => document.getElementById('status').dataset.ready) === 'yes', 'the page started');
  const adapter = await page.textContent('#adapter');
  ok(adapter.length > 0 && !adapter.startsWith('starting'), `the page names its adapter: ${adapter}`);
  ok(await page.evaluate(() => window.voxcast.onGpu()), 'the page renders on WebGPU');
  const frame = await page.evaluate(() => window.voxcast.check());
  console.log(`frame: ${await page.textContent('#check')}`);
  ok(frame.pixels === 1280 * 720 && frame.differ === 0, `the frame's ${frame.pixels} pixels equal the CPU reference's (${frame.differ} differ)`);
  console.log(`rate: ${await page.textContent('#rate')}`);
  const report = await page.evaluate(() => window.voxcast.parity());
  for (const c of report.checks) ok(c.differ === 0, `parity ${c.name}: ${c.differ} of ${c.compared} differ${c.first ? ` (first: ${c.first})` : ''}`);
  ok(report.checks.length === 40, `${report.checks.length} kinds and worlds checked, ${report.answers} answers`);
  ok(report.gpu_exact_digest === report.cpu_exact_digest, `GPU digest ${report.gpu_exact_digest} equals the CPU's ${report.cpu_exact_digest}`);
  ok(report.cpu_digest === nativeDigest, `the page's CPU digest ${report.cpu_digest} equals the native build's ${nativeDigest}`);
  writeFileSync(`${outDir}/parity.json`, JSON.stringify(report, null, 1));

  await page.screenshot({ path: `${outDir}/page.png` });
  console.log(`screenshot: ${outDir}/page.png`);

  // Click-to-break at the middle of the picture: the picture changes there and only there.
  const before = await canvasPixels(page);
  const box = await page.locator('#view').boundingBox();
  const [cx, cy] = [640, 420];
  const clicks = await page.evaluate(() => Number(document.getElementById('status').dataset.clicks ?? 0));
  await page.mouse.click(box.x + cx * box.width / 1280, box.y + cy * box.height / 720);
  await page.waitForFunction((n) => Number(document.getElementById('status').dataset.clicks ?? 0) > n, clicks, { timeout: 120000 });
  const broken = await page.evaluate(() => document.getElementById('status').dataset.last);
  const after = await canvasPixels(page);
  let changed = 0, x0 = 1e9, y0 = 1e9, x1 = -1, y1 = -1;
  for (let i = 0; i < before.length; i += 4) {
    if (before[i] !== after[i] || before[i + 1] !== after[i + 1] || before[i + 2] !== after[i + 2]) {
      const p = i / 4, x = p % 1280, y = Math.floor(p / 1280);
      changed += 1; x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
  }
  ok(broken !== '', `a click broke voxel ${broken}`);
  ok(changed > 0 && x0 <= cx && cx <= x1 && y0 <= cy && cy <= y1, `the picture changed under the cursor (${changed} pixels in x ${x0}..${x1}, y ${y0}..${y1})`);
  ok((x1 - x0) < 320 && (y1 - y0) < 240, 'and only around it');
  const frame2 = await page.evaluate(() => window.voxcast.check());
  ok(frame2.differ === 0, `after the edit the GPU's frame equals the CPU reference's (${frame2.differ} differ)`);

  // Keys pressed while a frame is drawn: the last frame drawn shows the camera where they
  // left it (every pixel equal to the CPU reference's for that camera).
  await page.locator('#view').focus();
  for (const key of ['KeyW', 'ArrowLeft', 'KeyD', 'ArrowUp', 'KeyW']) {
    await page.keyboard.press(key);
    await page.waitForTimeout(150);
  }
  for (let i = 0; i < 600 && !(await page.evaluate(() => window.voxcast.drawn())); i += 1) {
    await page.waitForTimeout(500);
  }
  const sample = await page.evaluate(() => document.getElementById('status').dataset.sampleDiffer);
  ok(sample === '0', `every frame drawn checked a sample of its pixels: ${await page.textContent('#check')}`);
  const moved = await page.evaluate(() => window.voxcast.check());
  ok(moved.differ === 0, `after moving during frames, the last frame shows the last camera (${moved.differ} of ${moved.pixels} differ)`);

  // Size limits: a clear error, nothing else changes.
  const refused = await page.evaluate(() => window.voxcast.resize(100000, 100000));
  ok(refused !== 'ok' && /canvas/.test(refused), `a 100000x100000 canvas is refused: ${refused}`);
  // A size the page renders: the canvas follows and the frame is exact at it; then the
  // window's own resize, which the canvas follows (16:9 of the window's width).
  const resized = await page.evaluate(() => window.voxcast.resize(640, 360));
  const small = await page.evaluate(() => window.voxcast.check());
  ok(resized === 'ok' && small.pixels === 640 * 360 && small.differ === 0,
    `a 640x360 canvas renders exactly at that size (${resized}; ${small.differ} of ${small.pixels} differ)`);
  await page.setViewportSize({ width: 840, height: 700 });
  let size = [0, 0];
  for (let i = 0; i < 100; i += 1) {
    size = await page.evaluate(() => window.voxcast.size());
    if (size[0] === 800) break;
    await page.waitForTimeout(100);
  }
  const fitted = await page.evaluate(() => window.voxcast.check());
  ok(size[0] === 800 && size[1] === 450 && fitted.pixels === 800 * 450 && fitted.differ === 0,
    `the canvas follows the window to ${size.join('x')} and renders exactly (${fitted.differ} of ${fitted.pixels} differ)`);
  await page.setViewportSize({ width: 1320, height: 900 });
  for (let i = 0; i < 100 && (await page.evaluate(() => window.voxcast.size()))[0] !== 1280; i += 1) {
    await page.waitForTimeout(100);
  }
  // The largest canvas the page renders works after a large one, and frames are cast and kept
  // in bands: the module's memory (which never shrinks) stays far below a whole frame's answers
  // (96 bytes a pixel: 1.6 GB at 4096x4096).
  const large = await page.evaluate(() => window.voxcast.resize(2560, 1440));
  const largeCheck = await page.evaluate(() => window.voxcast.check());
  ok(large === 'ok' && largeCheck.pixels === 2560 * 1440 && largeCheck.differ === 0,
    `a 2560x1440 canvas renders exactly (${large}; ${largeCheck.differ} of ${largeCheck.pixels} differ)`);
  const largest = await page.evaluate(() => window.voxcast.resize(4096, 4096));
  const largestSample = await page.evaluate(() => document.getElementById('status').dataset.sampleDiffer);
  const memory = await page.evaluate(() => window.voxcast.memory());
  ok(largest === 'ok' && largestSample === '0' && memory < 1.2e9,
    `then the largest, 4096x4096, renders (${largest}; sample differ ${largestSample}) with ${(memory / 2 ** 20).toFixed(0)} MiB of module memory`);
  await page.evaluate(() => window.voxcast.resize(1280, 720));
  // A world larger than the browser's storage limit: a clear error on the page, and the
  // world the page renders is unchanged.
  const tooLarge = await page.evaluate(() => window.voxcast.oversizedWorld().catch((e) => `rejected: ${e.message ?? e}`));
  const shown = await page.textContent('#notice');
  ok(/chunk table .* needs .* but the limit is/.test(tooLarge) && shown.includes(tooLarge), `a world larger than the storage limit is refused on the page: ${tooLarge}`);
  await page.evaluate(() => window.voxcast.redraw());
  const frame3 = await page.evaluate(() => window.voxcast.check());
  ok(frame3.differ === 0, `and the page still renders its world exactly (${frame3.differ} differ)`);
  // A failed draw's notice goes once a frame is drawn again.
  await page.evaluate(() => { document.getElementById('notice').textContent = ''; });
  const failedDraw = await page.evaluate(() => window.voxcast.failOnce());
  const failedNotice = await page.textContent('#notice');
  await page.evaluate(() => window.voxcast.redraw());
  const afterGood = await page.textContent('#notice');
  ok(failedNotice.startsWith('voxcast: ') && failedNotice.includes(failedDraw) && afterGood === '',
    `a failed frame's notice (${failedNotice}) goes after the next good frame (now: "${afterGood}")`);
  // A lost device: the browser's GPU process killed (DevTools' Browser.crashGpuProcess, what
  // a driver crash does to a tab). The next frame fails with a message on the page, and
  // nothing hangs.
  const cdp = await browser.newBrowserCDPSession();
  await cdp.send('Browser.crashGpuProcess');
  const t = Date.now();
  const redraw = await Promise.race([
    page.evaluate(() => window.voxcast.redraw().then(() => 'drawn', (e) => `failed: ${e.message ?? e}`)),
    new Promise((done) => setTimeout(() => done('no answer in 60 s'), 60000)),
  ]);
  const lost = await page.textContent('#notice');
  ok(/^failed: GPU error/.test(redraw) && lost === `voxcast: ${redraw.slice('failed: '.length)}`, `with the GPU process killed, the next frame fails in ${Date.now() - t} ms and the page says so: ${lost}`);
  await browser.close();
}

// With WebGPU and no ?gpu: a software adapter (SwiftShader here) leaves the page to the CPU
// reference, and the page says so; another adapter renders.
{
  const { browser, page } = await open(true);
  const software = await page.evaluate(() => window.voxcast.software());
  const onGpu = await page.evaluate(() => window.voxcast.onGpu());
  const notice = await page.textContent('#notice');
  ok(software ? (!onGpu && /software WebGPU adapter.*\?gpu/.test(notice)) : onGpu,
    `a ${software ? 'software' : 'hardware'} adapter ${onGpu ? 'renders' : 'leaves the page to the CPU reference'}: ${notice}`);
  const frame = await page.evaluate(() => window.voxcast.check());
  ok(frame.differ === 0, `and the frame equals the CPU reference's (${frame.differ} differ)`);
  await browser.close();
}

// Without WebGPU: the page says so and renders on the CPU.
{
  const { browser, page } = await open(false);
  const notice = await page.textContent('#notice');
  ok(/No WebGPU/.test(notice), `without WebGPU the page says so: ${notice}`);
  ok(/browser/.test(notice) && !/apt-get/.test(notice), 'with advice for a browser, not for a Linux host');
  ok(!(await page.evaluate(() => window.voxcast.onGpu())), 'and renders with the CPU reference');
  const px = await canvasPixels(page);
  let sky = 0;
  for (let i = 0; i < px.length; i += 4) if (px[i + 3] === 255) sky += 1;
  ok(sky === 1280 * 720, 'every pixel drawn');
  await page.screenshot({ path: `${outDir}/page-cpu.png` });
  await browser.close();
}

console.log(failures === 0 ? 'web: every check passed' : `web: ${failures} checks failed`);
process.exit(failures === 0 ? 0 : 1);
