//! The demo page's module: the standard terrain rendered by one GPU batch a frame (or by the
//! CPU reference where the browser has no WebGPU), a camera that moves, blocks broken and
//! placed at the cursor, NPCs whose sight of the player is drawn, and the parity suite.
//!
//! Every call that touches the GPU returns a promise; the page makes one call at a time (the
//! state is borrowed for the length of a call).

use std::cell::RefCell;
use std::rc::Rc;

use glam::{DVec3, Vec3};
use js_sys::Promise;
use voxcast::gpu::{AgentPairs, CameraRows, GpuAgents, GpuConfig, GpuRaycaster, GpuWorld};
use voxcast::{
    Agent, Camera, LineOfSightOptions, RaycastOptions, RaycastOutcome, VoxelId, VoxelRay,
    VoxelWorld, WindowOutcome, WorldPos, agent_visibility, break_block, place_block,
    raycast_camera_rows_into, voxel_raycast_with,
};
use voxcast_testkit::scene::{STONE, Terrain};
use voxcast_testkit::shading::shade;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// The largest canvas the page renders, in pixels: above it `resize` refuses.
const MAX_PIXELS: u32 = 4096 * 4096;
/// How far the camera's rays reach, in voxels.
const MAX_DISTANCE: f32 = 1024.0;
/// How far a click reaches, in voxels.
const REACH: f32 = 256.0;
/// Pixels a frame is cast, shaded and kept in at a time (at least 8 rows, a multiple of 8):
/// the answers of one band (96 bytes a pixel) take memory, not those of the whole frame.
const BAND_PIXELS: u32 = 1 << 19;

/// What the page holds between calls.
struct State {
    world: VoxelWorld,
    gpu: Option<(GpuRaycaster, GpuWorld)>,
    /// Why the page renders on the CPU, when it does.
    notice: Option<String>,
    width: u32,
    height: u32,
    /// The eye, in voxels (f64: the terrain is small), and where it looks.
    eye: DVec3,
    yaw: f32,
    pitch: f32,
    npcs: Vec<Agent>,
    /// The last frame's answers relative to its camera's voxel (44 bytes a pixel against a
    /// `RaycastOutcome`'s 96), for the parity check of the picture, and that voxel.
    last: Vec<WindowOutcome>,
    last_eye: WorldPos,
    /// The last frame's picture (RGBA), its memory kept for the next.
    rgba: Vec<u8>,
    /// Milliseconds the last frame's batch took, and its pixels.
    last_ms: f64,
    /// The NPCs' and the player's eyes on the GPU, updated each frame.
    eyes: Option<GpuAgents>,
}

/// The page's demo: build it with [`Demo::create`].
#[wasm_bindgen]
pub struct Demo {
    state: Rc<RefCell<State>>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo").finish_non_exhaustive()
    }
}

/// `e` as the error a promise rejects with.
fn js_error(e: impl std::fmt::Display) -> JsValue {
    JsValue::from(js_sys::Error::new(&e.to_string()))
}

/// The error of a call made while another holds the state (the page makes one at a time).
fn busy(_: impl std::fmt::Display) -> JsValue {
    js_error("the demo is busy with another call: make one call at a time")
}

/// The browser's clock, in milliseconds.
fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// The bands of rows a frame of `cam` is cast in ([`BAND_PIXELS`]).
fn bands(cam: &Camera) -> impl Iterator<Item = std::ops::Range<u32>> {
    let rows = (BAND_PIXELS / cam.width.max(1)).max(8) & !7;
    let height = cam.height;
    (0..height)
        .step_by(rows as usize)
        .map(move |y| y..(y + rows).min(height))
}

impl State {
    fn camera(&self) -> Result<Camera, String> {
        let forward = Vec3::new(
            self.yaw.sin() * self.pitch.cos(),
            self.pitch.sin(),
            self.yaw.cos() * self.pitch.cos(),
        );
        let ray =
            VoxelRay::from_point(self.eye, forward, MAX_DISTANCE).map_err(|e| e.to_string())?;
        Camera::new(
            ray.origin,
            ray.sub_offset,
            forward,
            60.0,
            self.width,
            self.height,
            MAX_DISTANCE,
        )
        .map_err(|e| e.to_string())
    }

    /// Where NPC `a`'s eye lands on the picture, if in front of the camera.
    fn project(&self, cam: &Camera, a: &Agent) -> Option<(f32, f32)> {
        let (p, o) = a.eye().ok()?;
        let at = DVec3::new(p.x as f64, p.y as f64, p.z as f64) + o.as_dvec3();
        let rel = (at - self.eye).as_vec3();
        let f = cam.forward.normalize();
        let depth = rel.dot(f);
        if depth <= 0.1 {
            return None;
        }
        let x = rel.dot(cam.right) / depth / cam.scale_x;
        let y = rel.dot(cam.up) / depth / cam.scale_y;
        let px = (x + 1.0) * 0.5 * self.width as f32;
        let py = (1.0 - y) * 0.5 * self.height as f32;
        Some((px, py))
    }
}

/// The NPCs drawn on the picture `rgba`: a square at each one's eye and a line from the bottom
/// middle (the player), green where it sees the player, red where it does not.
fn draw_npcs(state: &State, cam: &Camera, rgba: &mut [u8], sees: &[bool]) {
    let (w, h) = (state.width as i32, state.height as i32);
    let mut dot = |x: i32, y: i32, c: [u8; 3]| {
        if (0..w).contains(&x) && (0..h).contains(&y) {
            let i = ((y * w + x) * 4) as usize;
            rgba[i..i + 3].copy_from_slice(&c);
        }
    };
    for (a, &seen) in state.npcs.iter().zip(sees) {
        let Some((px, py)) = state.project(cam, a) else {
            continue;
        };
        let c = if seen { [40, 220, 60] } else { [230, 40, 40] };
        let (x0, y0) = (w as f32 / 2.0, h as f32 - 1.0);
        let steps = ((px - x0).abs().max((py - y0).abs()) as i32).clamp(1, 4096);
        for s in 0..=steps {
            let t = s as f32 / steps as f32;
            dot((x0 + (px - x0) * t) as i32, (y0 + (py - y0) * t) as i32, c);
        }
        for dy in -3..=3 {
            for dx in -3..=3 {
                dot(px as i32 + dx, py as i32 + dy, c);
            }
        }
    }
}

/// The player as an agent at the eye (eye height 0), for the NPCs' sight.
fn player(eye: DVec3) -> Result<Agent, String> {
    let ray = VoxelRay::from_point(eye, Vec3::X, 0.0).map_err(|e| e.to_string())?;
    Ok(Agent::new(ray.origin, ray.sub_offset, 0.0))
}

/// Renders a frame into `state.rgba`, band by band ([`bands`]), keeping its answers.
async fn frame(state: &mut State) -> Result<(), String> {
    let cam = state.camera()?;
    let opts = RaycastOptions::default();
    let mut agents = state.npcs.clone();
    agents.push(player(state.eye)?);
    let me = (agents.len() - 1) as u32;
    let pairs: Vec<[u32; 2]> = (0..me).map(|i| [i, me]).collect();
    let sight = LineOfSightOptions::default();
    let pixels = cam.width as usize * cam.height as usize;
    let mut cast_ms = 0.0;
    let start = now_ms();
    // The NPCs' sight of the player: on the GPU submitted first and awaited after the image.
    let seen = match &state.gpu {
        Some((gpu, gw)) => {
            // The eyes' buffer is kept from frame to frame and only rewritten.
            let on_gpu = match &mut state.eyes {
                Some(eyes) => {
                    eyes.update(&agents, gw).map_err(|e| e.to_string())?;
                    eyes
                }
                eyes => eyes.insert(gpu.upload_agents(&agents, gw).map_err(|e| e.to_string())?),
            };
            let query = AgentPairs {
                agents: on_gpu,
                pairs: &pairs,
                outcomes: false,
            };
            Some(gpu.submit(query, gw, &sight).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    cast_ms += now_ms() - start;
    state.last.clear();
    state.last.reserve(pixels);
    state.last_eye = cam.position;
    state.rgba.clear();
    state.rgba.reserve(pixels * 4);
    let mut band = Vec::new();
    for rows in bands(&cam) {
        let t = now_ms();
        match &state.gpu {
            Some((gpu, gw)) => {
                let query = CameraRows { camera: &cam, rows };
                let pending = gpu
                    .submit_into(query, gw, &opts, std::mem::take(&mut band))
                    .map_err(|e| e.to_string())?;
                band = pending.await.map_err(|e| e.to_string())?;
            }
            None => raycast_camera_rows_into(&cam, rows, &state.world, &opts, &mut band)
                .map_err(|e| e.to_string())?,
        }
        cast_ms += now_ms() - t;
        for o in &band {
            let [r, g, b] = shade(o, MAX_DISTANCE);
            state.rgba.extend_from_slice(&[r, g, b, 255]);
            state
                .last
                .push(WindowOutcome::from_outcome(o, cam.position));
        }
    }
    let t = now_ms();
    let sees: Vec<bool> = match seen {
        Some(seen) => {
            let seen = seen.await.map_err(|e| e.to_string())?;
            (0..pairs.len()).map(|i| seen.visible(i)).collect()
        }
        None => agent_visibility(&agents, &pairs, &state.world, &sight)
            .iter()
            .map(|s| *s == voxcast::LineOfSight::Clear)
            .collect(),
    };
    state.last_ms = cast_ms + (now_ms() - t);
    let mut rgba = std::mem::take(&mut state.rgba);
    draw_npcs(state, &cam, &mut rgba, &sees);
    state.rgba = rgba;
    Ok(())
}

#[wasm_bindgen]
#[expect(
    clippy::await_holding_refcell_ref,
    reason = "a call holds the state to its end; a call made meanwhile fails with `busy` instead of waiting"
)]
impl Demo {
    /// Builds the standard terrain and, with `webgpu`, a raycaster on the browser's adapter
    /// (a failure there is a notice, and the CPU reference renders). Resolves to the demo.
    #[wasm_bindgen]
    pub fn create(width: u32, height: u32, webgpu: bool) -> Promise {
        future_to_promise(async move {
            check_size(width, height).map_err(js_error)?;
            let t = Terrain::STANDARD;
            let world = t.build();
            let (gpu, notice) = if webgpu {
                match GpuRaycaster::new(GpuConfig::default()).await {
                    Ok(gpu) => match gpu.upload_world(&world) {
                        Ok(gw) => (Some((gpu, gw)), None),
                        Err(e) => (None, Some(format!("the GPU cannot hold the world: {e}"))),
                    },
                    Err(e) => (None, Some(format!("no WebGPU adapter: {e}"))),
                }
            } else {
                (None, Some("this browser has no WebGPU".into()))
            };
            let cam = t.camera(width, height);
            let eye = DVec3::new(
                cam.position.x as f64,
                cam.position.y as f64,
                cam.position.z as f64,
            ) + cam.sub_offset.as_dvec3();
            let f = cam.forward.normalize();
            let npcs = t
                .agents(40, 7)
                .into_iter()
                .filter(|a| {
                    let d = DVec3::new(
                        a.position.x as f64,
                        a.position.y as f64,
                        a.position.z as f64,
                    ) - eye;
                    d.length() < 200.0 && d.as_vec3().dot(f) > 0.0
                })
                .take(6)
                .collect();
            let state = State {
                world,
                gpu,
                notice,
                width,
                height,
                eye,
                yaw: f.x.atan2(f.z),
                pitch: f.y.asin(),
                npcs,
                last: Vec::new(),
                last_eye: WorldPos::ZERO,
                rgba: Vec::new(),
                last_ms: 0.0,
                eyes: None,
            };
            Ok(JsValue::from(Demo {
                state: Rc::new(RefCell::new(state)),
            }))
        })
    }

    /// The adapter the page renders with (its name and backend), or `CPU reference` and why.
    pub fn adapter(&self) -> Result<String, JsValue> {
        let s = self.state.try_borrow().map_err(busy)?;
        Ok(match (&s.gpu, &s.notice) {
            (Some((gpu, _)), _) => {
                let info = gpu.adapter_info();
                let name = [&info.name, &info.driver, &info.driver_info]
                    .into_iter()
                    .find(|s| !s.is_empty())
                    .map_or("an unnamed adapter", String::as_str);
                format!("{name} ({:?}, vendor {:#x})", info.backend, info.vendor)
            }
            (None, Some(why)) => format!("CPU reference ({why})"),
            (None, None) => "CPU reference".into(),
        })
    }

    /// Whether the GPU renders (else the CPU reference).
    pub fn on_gpu(&self) -> Result<bool, JsValue> {
        Ok(self.state.try_borrow().map_err(busy)?.gpu.is_some())
    }

    /// Milliseconds the last frame's batch took (the camera's rays and the NPCs' sight).
    pub fn last_ms(&self) -> Result<f64, JsValue> {
        Ok(self.state.try_borrow().map_err(busy)?.last_ms)
    }

    /// Renders a frame; resolves to its RGBA bytes (a `Uint8Array`, width × height × 4).
    pub fn render(&self) -> Promise {
        let state = Rc::clone(&self.state);
        future_to_promise(async move {
            let mut s = state.try_borrow_mut().map_err(busy)?;
            frame(&mut s).await.map_err(js_error)?;
            Ok(js_sys::Uint8Array::from(s.rgba.as_slice()).into())
        })
    }

    /// Compares the last frame with the CPU reference pixel by pixel, band by band: resolves to
    /// `[differing, pixels]`.
    pub fn check_frame(&self) -> Result<Vec<u32>, JsValue> {
        let s = self.state.try_borrow().map_err(busy)?;
        let cam = s.camera().map_err(js_error)?;
        let pixels = cam.width as usize * cam.height as usize;
        if s.last.len() != pixels {
            return Ok(vec![pixels as u32, pixels as u32]);
        }
        let (mut cpu, mut differ, mut at) = (Vec::new(), 0u32, 0);
        for rows in bands(&cam) {
            raycast_camera_rows_into(&cam, rows, &s.world, &RaycastOptions::default(), &mut cpu)
                .map_err(js_error)?;
            differ += cpu
                .iter()
                .zip(&s.last[at..])
                .filter(|(c, k)| !WindowOutcome::from_outcome(c, s.last_eye).matches(k))
                .count() as u32;
            at += cpu.len();
        }
        Ok(vec![differ, pixels as u32])
    }

    /// Compares every `every`-th pixel of the last frame (in row order, from pixel 0) with the
    /// CPU reference's ray for that pixel: resolves to `[differing, compared]`. Cheap enough
    /// to run after every frame (`every` of 97 compares about 9,500 pixels of a 1280x720
    /// frame); `every` of 0 is taken as 1.
    pub fn check_sample(&self, every: u32) -> Result<Vec<u32>, JsValue> {
        let s = self.state.try_borrow().map_err(busy)?;
        let cam = s.camera().map_err(js_error)?;
        let pixels = cam.width as usize * cam.height as usize;
        if s.last.len() != pixels {
            return Ok(vec![pixels as u32, pixels as u32]);
        }
        let opts = RaycastOptions::default();
        let (mut differ, mut compared) = (0u32, 0u32);
        for i in (0..pixels).step_by(every.max(1) as usize) {
            let (x, y) = (
                (i % cam.width as usize) as u32,
                (i / cam.width as usize) as u32,
            );
            let cpu = match cam.ray(x, y) {
                Ok(r) => voxel_raycast_with(&r, &s.world, &opts),
                Err(e) => RaycastOutcome::Invalid(e),
            };
            compared += 1;
            differ += u32::from(!WindowOutcome::from_outcome(&cpu, s.last_eye).matches(&s.last[i]));
        }
        Ok(vec![differ, compared])
    }

    /// Bytes of the page module's memory (WebAssembly's, which grows and never shrinks): for
    /// the page's tests, which check that large frames keep it bounded.
    pub fn memory_bytes(&self) -> Result<f64, JsValue> {
        let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().dyn_into()?;
        let buffer: js_sys::ArrayBuffer = memory.buffer().dyn_into()?;
        Ok(f64::from(buffer.byte_length()))
    }

    /// Moves the eye by `forward`, `right` and `up` voxels (along the view's heading) and turns
    /// it by `yaw` and `pitch` radians.
    pub fn move_by(
        &self,
        forward: f64,
        right: f64,
        up: f64,
        yaw: f32,
        pitch: f32,
    ) -> Result<(), JsValue> {
        let mut s = self.state.try_borrow_mut().map_err(busy)?;
        s.yaw += yaw;
        s.pitch = (s.pitch + pitch).clamp(-1.5, 1.5);
        let (sy, cy) = (f64::from(s.yaw.sin()), f64::from(s.yaw.cos()));
        let step =
            DVec3::new(sy, 0.0, cy) * forward + DVec3::new(-cy, 0.0, sy) * right + DVec3::Y * up;
        s.eye += step;
        Ok(())
    }

    /// Breaks the block under pixel `(x, y)` (or with `place`, places stone against the face
    /// the cursor points at), as the Bevy plugin's block targeting does, and updates the GPU
    /// world. Resolves to the voxel changed, `"x,y,z"`, or `null` where the cursor points at
    /// nothing within reach.
    pub fn click(&self, x: u32, y: u32, place: bool) -> Promise {
        let state = Rc::clone(&self.state);
        future_to_promise(async move {
            let mut s = state.try_borrow_mut().map_err(busy)?;
            let cam = s.camera().map_err(js_error)?;
            let mut ray = cam.ray(x, y).map_err(js_error)?;
            ray.max_distance = REACH;
            let hit = match voxel_raycast_with(&ray, &s.world, &RaycastOptions::default()) {
                RaycastOutcome::Hit(h) => h,
                _ => return Ok(JsValue::NULL),
            };
            let changed = if place {
                place_block(&mut s.world, &hit, STONE).map_err(js_error)?
            } else {
                break_block(&mut s.world, &hit).map_err(js_error)?;
                hit.voxel_pos
            };
            let s = &mut *s;
            if let Some((_, gw)) = &mut s.gpu {
                gw.update_chunks(&s.world, &[changed.chunk()])
                    .map_err(js_error)?;
            }
            Ok(JsValue::from(format!(
                "{},{},{}",
                changed.x, changed.y, changed.z
            )))
        })
    }

    /// The voxel id at `x, y, z` (`0` for air), for the page's tests.
    pub fn voxel(&self, x: i32, y: i32, z: i32) -> Result<u16, JsValue> {
        let s = self.state.try_borrow().map_err(busy)?;
        Ok(s.world
            .get_voxel(&WorldPos::new(x.into(), y.into(), z.into()))
            .unwrap_or(VoxelId::AIR)
            .0)
    }

    /// Tries to upload the page's world as a window around the eye whose chunk table alone
    /// (4 bytes a chunk) is about twice the device's largest storage binding, for the page's
    /// tests of the size limits: resolves to voxcast's refusal (`GpuError::LimitExceeded`), and
    /// the world the page renders is unchanged. Rejects when the page renders on the CPU, or
    /// when the upload was not refused.
    pub fn upload_oversized_window(&self) -> Result<String, JsValue> {
        let s = self.state.try_borrow().map_err(busy)?;
        let Some((gpu, _)) = &s.gpu else {
            return Err(js_error(
                "the page renders on the CPU: no device limit to exceed",
            ));
        };
        let limits = gpu.device().0.limits();
        let limit = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        // A cube of `side` chunks a side holds `side³ · 4` bytes of table: twice the limit.
        let side = ((limit / 2) as f64).cbrt().ceil() as u32;
        let eye = WorldPos::new(
            s.eye.x.floor() as i128,
            s.eye.y.floor() as i128,
            s.eye.z.floor() as i128,
        );
        match gpu.upload_window(&s.world, eye.chunk(), [side.div_ceil(2); 3]) {
            Ok(_) => Err(js_error(format!(
                "a window of {side} chunks a side was not refused (storage binding limit {limit} bytes)"
            ))),
            Err(e) => Ok(format!("the GPU cannot hold that world: {e}")),
        }
    }

    /// Changes the picture's size; refuses a canvas larger than the page renders or the
    /// device allows, changing nothing then.
    pub fn resize(&self, width: u32, height: u32) -> Result<(), JsValue> {
        check_size(width, height).map_err(js_error)?;
        let mut s = self.state.try_borrow_mut().map_err(busy)?;
        s.width = width;
        s.height = height;
        Ok(())
    }

    /// Runs the parity suite ([`crate::suite`]) on this page's GPU (or on the CPU alone):
    /// resolves to its report as JSON.
    pub fn parity(&self) -> Promise {
        let state = Rc::clone(&self.state);
        future_to_promise(async move {
            let s = state.try_borrow().map_err(busy)?;
            let gpu = s.gpu.as_ref().map(|(g, _)| g);
            let report = crate::suite::run(gpu, &s.world).await.map_err(js_error)?;
            Ok(JsValue::from(report.to_json()))
        })
    }
}

/// Refuses a picture of no pixels or more than [`MAX_PIXELS`].
fn check_size(width: u32, height: u32) -> Result<(), String> {
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 || pixels > u64::from(MAX_PIXELS) {
        return Err(format!(
            "a {width}x{height} canvas is outside what the page renders (1 to {MAX_PIXELS} pixels)"
        ));
    }
    Ok(())
}
