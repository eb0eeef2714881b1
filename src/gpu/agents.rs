//! Agent visibility on the GPU: agents' eyes uploaded once a frame ([`GpuAgents`]), then line
//! of sight for pairs of them in one batch, each segment built in the shader from the two eyes
//! exactly as [`VoxelRay::between`] builds it, with the pairs that have an eye outside the
//! window cast from segments built on the host; and what collects their answers.

use glam::Vec3;
use std::sync::Arc;

use crate::agents::Agent;
use crate::coords::{ChunkPos, WorldPos};
use crate::cpu_ref::LONG_RAY;
use crate::gpu::answers::{Collector, RayAnswers, push_flight, ray_flight};
use crate::gpu::decode::decode;
use crate::gpu::device::Device;
use crate::gpu::error::{GpuError, device_error};
use crate::gpu::flight::{Batches, Binding, Flight, Items, bit_words};
use crate::gpu::layout::{Entry, GpuAgent, GpuHit, option_flags};
use crate::gpu::window::Window;
use crate::gpu::world::GpuWorld;
use crate::ray::{LineOfSight, LineOfSightOptions, RayError, VoxelRay};

/// Agents' eyes in GPU memory, for
/// [`GpuRaycaster::agent_visibility`](crate::gpu::GpuRaycaster::agent_visibility): made for one
/// [`GpuWorld`] by
/// [`GpuRaycaster::upload_agents`](crate::gpu::GpuRaycaster::upload_agents) (the eyes are
/// stored relative to its window) and updated when the agents move ([`GpuAgents::update`],
/// 32 bytes an agent uploaded). An agent whose eye is invalid
/// ([`Agent::eye`]) keeps its error ([`GpuAgents::errors`]); its pairs are answered with it,
/// and the other agents' are answered as usual.
#[derive(Debug)]
pub struct GpuAgents {
    buffer: wgpu::Buffer,
    /// Per agent: its eye, or why it has none.
    pub(super) eyes: Vec<Result<(WorldPos, Vec3), RayError>>,
    /// Per agent: its eye relative to the window, where the shader can start a segment there.
    starts: Vec<Option<[i32; 3]>>,
    /// The device they were uploaded on, and the window the eyes are relative to.
    device: Arc<Device>,
    window: (ChunkPos, [u32; 3]),
}

impl Drop for GpuAgents {
    fn drop(&mut self) {
        // Cached bind groups would keep the buffer alive.
        self.device.bind_groups.forget(&[&self.buffer]);
    }
}

impl GpuAgents {
    /// The eyes of `agents`, uploaded for batches on `world`.
    pub(super) fn new(
        device: &Arc<Device>,
        world: &GpuWorld,
        agents: &[Agent],
    ) -> Result<Self, GpuError> {
        let mut made = Self {
            buffer: device.wgpu.create_buffer(&wgpu::BufferDescriptor {
                label: Some("agents"),
                size: 32,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            eyes: Vec::new(),
            starts: Vec::new(),
            device: Arc::clone(device),
            window: (world.window.anchor, world.window.dims),
        };
        made.update(agents, world)?;
        Ok(made)
    }

    /// Replaces the agents with `agents` (their number may change), for batches on `world` (the
    /// world they were uploaded for, or another of the same raycaster): computes their eyes and
    /// uploads them, reusing the GPU buffer when it is large enough. Call it after the agents move
    /// and after `world` moves ([`GpuWorld::recenter`]).
    ///
    /// # Errors
    /// [`GpuError::WorldFromAnotherDevice`] for a world of another raycaster;
    /// [`GpuError::LimitExceeded`] for more agents than a storage binding holds;
    /// [`GpuError::Device`] when the upload fails.
    pub fn update(&mut self, agents: &[Agent], world: &GpuWorld) -> Result<(), GpuError> {
        if !world.is_on(&self.device) {
            return Err(GpuError::WorldFromAnotherDevice);
        }
        let w = &world.window;
        self.window = (w.anchor, w.dims);
        self.eyes.clear();
        self.eyes.extend(agents.iter().map(Agent::eye));
        self.starts.clear();
        self.starts.extend(
            self.eyes
                .iter()
                .map(|e| e.ok().and_then(|(p, sub)| w.start_of(p, sub))),
        );
        let records: Vec<GpuAgent> = self
            .eyes
            .iter()
            .zip(&self.starts)
            .map(|(eye, start)| match (eye, start) {
                (Ok((_, sub)), Some(voxel)) => GpuAgent {
                    voxel: *voxel,
                    usable: 1,
                    sub: sub.to_array(),
                    _pad: 0,
                },
                _ => GpuAgent::default(),
            })
            .collect();
        let bytes = (records.len() * size_of::<GpuAgent>()) as u64;
        let limit = self.device.limits.max_storage_buffer_binding_size;
        if bytes > limit {
            return Err(GpuError::LimitExceeded {
                what: "agents",
                needed: bytes,
                limit,
            });
        }
        let device = &self.device.wgpu;
        let scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        if self.buffer.size() < bytes {
            self.device.bind_groups.forget(&[&self.buffer]);
            self.buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("agents"),
                size: bytes.next_power_of_two(),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
        }
        if bytes > 0 {
            // Through the courier: before the next batch, without waiting for one in flight.
            self.device
                .courier
                .write(&self.buffer, 0, bytemuck::cast_slice(&records).to_vec())?;
        }
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(device_error(e)),
            None => Ok(()),
        }
    }

    /// How many agents there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.eyes.len()
    }

    /// Whether there are no agents.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.eyes.is_empty()
    }

    /// The agents whose eye is invalid, with the error their pairs are answered with.
    pub fn errors(&self) -> impl Iterator<Item = (usize, RayError)> + '_ {
        self.eyes
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.err().map(|e| (i, e)))
    }
}

/// Line of sight between pairs of agents: one bit per pair, and on request each pair's whole
/// answer (what blocks the blocked ones). What
/// [`GpuRaycaster::agent_visibility`](crate::gpu::GpuRaycaster::agent_visibility) gives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Visibility {
    /// Bit `i % 64` of word `i / 64`: pair `i` sees (line of sight `Clear`).
    bits: Vec<u64>,
    len: usize,
    answers: Option<Vec<LineOfSight>>,
}

impl Visibility {
    /// How many pairs there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no pairs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether pair `i` sees each other: nothing blocks the segment between their eyes
    /// (`LineOfSight::Clear`). `false` when it is blocked, enters unloaded space under
    /// `UnloadedPolicy::Stop` (or leaves a window that follows a centre, under either policy),
    /// or has no segment (an invalid agent, coinciding eyes, eyes more
    /// than `MAX_DISTANCE_CAP` apart), and for `i` past the end.
    #[must_use]
    pub fn visible(&self, i: usize) -> bool {
        i < self.len && self.bits[i / 64] >> (i % 64) & 1 == 1
    }

    /// The bits: bit `i % 64` of word `i / 64` is [`Visibility::visible`]`(i)`; bits past the
    /// last pair are 0.
    #[must_use]
    pub fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// How many pairs see each other.
    #[must_use]
    pub fn count_visible(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Each pair's answer (`Blocked` with the blocking hit, `Unknown`, `Invalid` with the
    /// error, or `Clear`), when the batch was asked for them.
    #[must_use]
    pub fn answers(&self) -> Option<&[LineOfSight]> {
        self.answers.as_deref()
    }

    fn set_visible(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
    }

    fn with_len(len: usize, answers: bool) -> Self {
        Self {
            bits: vec![0; len.div_ceil(64)],
            len,
            answers: answers.then(|| vec![LineOfSight::Clear; len]),
        }
    }

    fn set(&mut self, i: usize, answer: LineOfSight) {
        if answer == LineOfSight::Clear {
            self.set_visible(i);
        }
        if let Some(a) = &mut self.answers {
            a[i] = answer;
        }
    }
}

/// The answers of a visibility batch: one flight casts the pairs the shader takes (`gpu[j]` is
/// the caller's index of its pair `j`), flight `host_flight` segments built on the host for
/// pairs with an agent outside the window (`host[j]` likewise).
#[derive(Debug)]
pub(super) struct PairAnswers {
    visibility: Visibility,
    gpu: Vec<u32>,
    host: Vec<u32>,
    host_flight: usize,
    host_answers: RayAnswers<LineOfSight>,
    /// Per caller's pair: agent `a`'s eye relative to the window (the answers' start voxel).
    starts: Vec<[i32; 3]>,
    window: Window,
}

impl Collector<Visibility> for PairAnswers {
    fn collect(
        &mut self,
        flight: usize,
        items: &Items,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        if flight == self.host_flight {
            return self.host_answers.collect(flight, items, base, count, bytes);
        }
        let words: &[u32] = bytemuck::cast_slice(bytes);
        let bits = bit_words(count) as usize;
        let gpu = &self.gpu[base as usize..(base + count) as usize];
        if self.visibility.answers.is_none() {
            // Only the set bits: the others are 0 already.
            for (w, &word) in words[..bits].iter().enumerate() {
                let mut rest = word;
                while rest != 0 {
                    if let Some(&i) = gpu.get(w * 32 + rest.trailing_zeros() as usize) {
                        self.visibility.set_visible(i as usize);
                    }
                    rest &= rest - 1;
                }
            }
            return Ok(());
        }
        for (j, &i) in gpu.iter().enumerate() {
            let i = i as usize;
            let h: &GpuHit =
                bytemuck::from_bytes(bytemuck::cast_slice(&words[bits + 5 * j..bits + 5 * j + 5]));
            let answer = LineOfSight::from(decode(&self.window, h, self.starts[i])?);
            self.visibility.set(i, answer);
        }
        Ok(())
    }

    fn finish(&mut self) -> Visibility {
        let host = self.host_answers.finish();
        for (&i, &answer) in self.host.iter().zip(&host) {
            self.visibility.set(i as usize, answer);
        }
        std::mem::take(&mut self.visibility)
    }
}

/// The pairs of a visibility batch that see each other, as index pairs.
#[derive(Debug)]
pub(super) struct VisiblePairs {
    pub(super) pairs: Vec<[u32; 2]>,
    pub(super) inner: PairAnswers,
}

impl Collector<Vec<[u32; 2]>> for VisiblePairs {
    fn collect(
        &mut self,
        flight: usize,
        items: &Items,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
        self.inner.collect(flight, items, base, count, bytes)
    }

    fn finish(&mut self) -> Vec<[u32; 2]> {
        let v = self.inner.finish();
        self.pairs
            .iter()
            .enumerate()
            .filter(|&(i, _)| v.visible(i))
            .map(|(_, &p)| p)
            .collect()
    }
}

/// The flights of a visibility batch on `world`, dispatched `per_dispatch` at a time, and
/// what collects their answers: the pairs the shader takes, and segments built on the host
/// for pairs with an agent outside the window. Also returns how many went to the GPU.
pub(super) fn pair_flights(
    batches: &Arc<Batches>,
    world: &GpuWorld,
    per_dispatch: u32,
    agents: &GpuAgents,
    pairs: &[[u32; 2]],
    opts: &LineOfSightOptions,
    answers: bool,
) -> Result<(Vec<Flight>, PairAnswers, u64), GpuError> {
    let w = &world.window;
    if !Arc::ptr_eq(&agents.device, &batches.device) {
        return Err(GpuError::WorldFromAnotherDevice);
    }
    if agents.window != (w.anchor, w.dims) {
        return Err(GpuError::AgentsForAnotherWindow);
    }
    let mut visibility = Visibility::with_len(pairs.len(), answers);
    let start = |k: u32| agents.starts.get(k as usize).copied().flatten();
    // Each pair's octant of direction where the shader takes it (both eyes in the
    // window), else `HOST`; how many pairs each has; whether every such pair is a long
    // ray (eyes at least `LONG_RAY` voxels apart on some axis: then the shader skips
    // empty bricks, as for a batch of rays that long).
    const HOST: u8 = 8;
    let mut per_octant = [0usize; 9];
    let mut long = true;
    let octants: Vec<u8> = pairs
        .iter()
        .map(|&[a, b]| {
            let octant = match (start(a), start(b)) {
                (Some(sa), Some(sb)) => {
                    let span = (0..3).map(|k| sb[k].abs_diff(sa[k])).max().unwrap_or(0);
                    long &= span >= LONG_RAY as u32;
                    (0..3).fold(0, |o, axis| o | u8::from(sb[axis] < sa[axis]) << axis)
                }
                _ => HOST,
            };
            per_octant[usize::from(octant)] += 1;
            octant
        })
        .collect();
    // The shader's pairs by octant, in the caller's order within one, so that neighbouring
    // invocations step the same way; segments built on the host for the others.
    let mut next = [0usize; 8];
    let mut at = 0;
    for (n, c) in next.iter_mut().zip(per_octant) {
        (*n, at) = (at, at + c);
    }
    let mut on_gpu = vec![[0u32; 2]; at];
    let mut gpu_index = vec![0u32; at];
    let mut host_segments = Vec::new();
    let mut host_index = Vec::new();
    let mut starts = vec![[0; 3]; if answers { pairs.len() } else { 0 }];
    for (i, (&[a, b], &octant)) in pairs.iter().zip(&octants).enumerate() {
        if let Some(j) = next.get_mut(usize::from(octant)) {
            on_gpu[*j] = [a, b];
            gpu_index[*j] = i as u32;
            *j += 1;
            if answers && let Some(sa) = start(a) {
                starts[i] = sa;
            }
            continue;
        }
        let eye = |k: u32| {
            agents
                .eyes
                .get(k as usize)
                .copied()
                .unwrap_or(Err(RayError::NoSuchAgent))
        };
        let segment = eye(a).and_then(|(p, ps)| {
            let (q, qs) = eye(b)?;
            VoxelRay::between(p, ps, q, qs)
        });
        match segment {
            Ok(seg) => {
                host_segments.push(seg);
                host_index.push(i as u32);
            }
            Err(e) => visibility.set(i, LineOfSight::Invalid(e)),
        }
    }
    let mut flights = Vec::new();
    let gpu_pairs = on_gpu.len() as u64;
    if !on_gpu.is_empty() {
        let mut params = world.params();
        params.details = u32::from(answers);
        let binding = Binding::new(
            &batches.device,
            world,
            Entry::Pairs,
            option_flags(&opts.raycast, opts.conservative) | world.walk_flags(long),
            params,
            &opts.raycast,
        )?;
        flights.push(Flight::start(
            batches,
            binding,
            Items::Pairs {
                pairs: on_gpu,
                agents: agents.buffer.clone(),
                details: answers,
            },
            per_dispatch,
        )?);
    }
    let (host_flight, host_answers, host_rays) = ray_flight(
        batches,
        world,
        per_dispatch,
        &host_segments,
        &opts.raycast,
        opts.conservative,
        Vec::<LineOfSight>::new(),
    )?;
    let host_flight = push_flight(&mut flights, host_flight);
    let collector = PairAnswers {
        visibility,
        gpu: gpu_index,
        host: host_index,
        host_flight,
        host_answers,
        starts,
        window: *w,
    };
    Ok((flights, collector, gpu_pairs + host_rays))
}
