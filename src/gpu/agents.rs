//! Agent visibility on the GPU: agents' eyes uploaded once a frame ([`GpuAgents`]), then line
//! of sight for pairs of them in one batch, each segment built in the shader from the two eyes
//! exactly as [`VoxelRay::sight_line`] builds it, with the pairs that have an eye outside the
//! window cast from segments built on the host; and what collects their answers.

use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use std::sync::Arc;

use crate::agents::Agent;
use crate::coords::{ChunkPos, WorldPos};
use crate::cpu_ref::LONG_RAY;
use crate::gpu::decode::decode;
use crate::gpu::device::Device;
use crate::gpu::error::{GpuError, device_error};
use crate::gpu::flight::Upload;
use crate::gpu::layout::{Access, Entry, GpuHit, bind, option_flags, wire};
use crate::gpu::pending::{Collect, Joined, Launch, Leg, PendingBatch};
use crate::gpu::query::{Query, sealed::Sealed};
use crate::gpu::rays::{RayAnswers, RayUpload, ray_leg};
use crate::gpu::window::Window;
use crate::gpu::world::GpuWorld;
use crate::ray::{LineOfSight, LineOfSightOptions, RayError, VoxelRay, point_order};

/// `cast_pairs`: line of sight between pairs of agents (`shaders/agents.wgsl`): pairs of agent
/// indices and the agents' eyes in, the pairs' bits and answers out.
pub(super) const ENTRY: Entry = Entry {
    name: "cast_pairs",
    input: bind(8, "pairs", Access::Read),
    extra: Some(bind(9, "agents", Access::Read)),
    output: bind(10, "pair_out", Access::ReadWrite),
    reads_input: true,
    reads_shapes: true,
    structs: &[wire::<GpuAgent>("GpuAgent")],
    constants: &[],
    shader_only: &[],
};

/// One agent's eye as the shader reads it (`GpuAgent` in `shaders/agents.wgsl`): 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct GpuAgent {
    pub(super) voxel: [i32; 3],
    pub(super) usable: u32,
    pub(super) sub: [f32; 3],
    pub(super) _pad: u32,
}

/// Agents' eyes in GPU memory, for
/// [`AgentPairs`]: made for one
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
        match crate::gpu::error::error_now(scope) {
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
/// answer (what blocks the blocked ones). What [`AgentPairs`] answers.
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
    /// `UnloadedPolicy::Stop` (or leaves a window that follows a center, under either policy),
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

    /// No pair visible yet among `len`, with room for their answers where asked for: the
    /// allocations kept.
    fn reset(&mut self, len: usize, answers: bool) {
        self.bits.clear();
        self.bits.resize(len.div_ceil(64), 0);
        self.len = len;
        if answers {
            let a = self.answers.get_or_insert_with(Vec::new);
            a.clear();
            a.resize(len, LineOfSight::Clear);
        } else {
            self.answers = None;
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

/// The pairs of a visibility batch that the shader takes (two u32 indices each) and the
/// agents' buffer; `details`: whether each pair's full answer is written besides its bit.
#[derive(Debug)]
pub(super) struct PairUpload {
    pairs: Vec<[u32; 2]>,
    agents: wgpu::Buffer,
    details: bool,
}

impl Upload for PairUpload {
    const ENTRY: Entry = self::ENTRY;

    fn count(&self) -> u64 {
        self.pairs.len() as u64
    }

    /// A pair's bit (a word per 32 pairs) first, then with details their answers.
    fn bytes(&self, n: u64) -> (u64, u64) {
        let answers = if self.details {
            n * size_of::<GpuHit>() as u64
        } else {
            0
        };
        (n * 8, bit_words(n) * 4 + answers)
    }

    fn input(&self, base: u64, count: u64) -> &[u8] {
        bytemuck::cast_slice(&self.pairs[base as usize..(base + count) as usize])
    }

    fn extra(&self) -> Option<&wgpu::Buffer> {
        Some(&self.agents)
    }

    /// The bits are set with atomic ORs.
    fn cleared_output(&self, count: u64) -> u64 {
        bit_words(count) * 4
    }
}

/// Words of visibility bits for `n` pairs: a pair dispatch's output starts with them, and its
/// answers (with details) follow.
fn bit_words(n: u64) -> u64 {
    n.div_ceil(32)
}

/// The answers of a visibility batch's pairs that the shader takes (`gpu[j]` is the caller's
/// index of its pair `j`); the pairs with an agent outside the window are cast from segments
/// built on the host, and [`PairAnswers::join`] puts their answers in (`host[j]` likewise).
#[derive(Debug)]
pub(super) struct PairAnswers {
    visibility: Visibility,
    gpu: Vec<u32>,
    host: Vec<u32>,
    /// Per caller's pair: agent `a`'s eye relative to the window (the answers' start voxel).
    starts: Vec<[i32; 3]>,
    window: Window,
}

impl Collect<PairUpload> for PairAnswers {
    type Output = Self;

    fn collect(
        &mut self,
        _items: &PairUpload,
        base: u64,
        count: u64,
        bytes: &[u8],
    ) -> Result<(), GpuError> {
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

    fn finish(self) -> Self {
        self
    }
}

impl PairAnswers {
    /// The visibility of every pair: the shader's answers, with `host` (the answers of the
    /// segments built on the host, in order) put in.
    fn join(self, host: Vec<LineOfSight>) -> Visibility {
        let mut visibility = self.visibility;
        for (&i, &answer) in self.host.iter().zip(&host) {
            visibility.set(i as usize, answer);
        }
        visibility
    }
}

/// Line of sight between the eyes of pairs of agents on the GPU, the twin of
/// [`agent_visibility`](crate::agent_visibility): one bit a pair, and with `outcomes` each
/// pair's [`LineOfSight`] too (what blocks it), bit for bit the CPU's answers. Each pair's
/// segment, from the lower eye to the higher (one answer for either order of the pair), is
/// built in the shader exactly as [`VoxelRay::sight_line`] builds it: 8 bytes up a pair (its
/// two indices) and one bit down
/// (20 bytes with `outcomes`). Every option of line of sight works, conservative too.
///
/// A pair with an invalid agent ([`GpuAgents::errors`]) or an index past the end gets
/// `LineOfSight::Invalid` (and is not visible); a pair with an agent outside the window is
/// cast from a segment built on the host, as a batch of rays. On a window that follows a
/// center, a pair whose segment leaves it is `LineOfSight::Unknown` where it leaves and not
/// visible: ask for `outcomes` to tell those pairs ([`GpuWorld::left_window`]) and complete
/// them on the CPU ([`Sightlines::complete`](crate::gpu::Sightlines::complete) with
/// [`agent_segment`](crate::agent_segment)).
///
/// Submitting it fails with [`GpuError::WorldFromAnotherDevice`] also when `agents` were
/// uploaded with another raycaster, and [`GpuError::AgentsForAnotherWindow`] when they were
/// uploaded before the world moved.
#[derive(Clone, Copy, Debug)]
pub struct AgentPairs<'a> {
    /// The agents' eyes ([`GpuRaycaster::upload_agents`](crate::gpu::GpuRaycaster::upload_agents)).
    pub agents: &'a GpuAgents,
    /// Pairs of indices into the agents.
    pub pairs: &'a [[u32; 2]],
    /// Whether each pair's whole answer comes back too ([`Visibility::answers`]).
    pub outcomes: bool,
}

impl Sealed for AgentPairs<'_> {}

impl Query for AgentPairs<'_> {
    type Answers = Visibility;
    type Options = LineOfSightOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &LineOfSightOptions,
        reuse: Visibility,
    ) -> Result<PendingBatch<Visibility>, GpuError> {
        let (job, uploaded) = pair_job(&launch, self, opts, reuse)?;
        Ok(launch.pending(job, uploaded))
    }
}

/// The job of a visibility batch on the launch's world: the pairs the shader takes, and
/// segments built on the host for pairs with an agent outside the window, their answers
/// joined into `visibility` (reset first, its allocations kept). Also returns how many went to
/// the GPU.
pub(super) fn pair_job(
    launch: &Launch<'_>,
    query: AgentPairs<'_>,
    opts: &LineOfSightOptions,
    mut visibility: Visibility,
) -> Result<(PairJob, u64), GpuError> {
    let AgentPairs {
        agents,
        pairs,
        outcomes: answers,
    } = query;
    let (batches, world) = (launch.batches, launch.world);
    let w = &world.window;
    if !Arc::ptr_eq(&agents.device, &batches.device) {
        return Err(GpuError::WorldFromAnotherDevice);
    }
    if agents.window != (w.anchor, w.dims) {
        return Err(GpuError::AgentsForAnotherWindow);
    }
    visibility.reset(pairs.len(), answers);
    // Each pair as its segment is cast, from the lower eye (`VoxelRay::sight_line`).
    let eye = |k: u32| {
        agents
            .eyes
            .get(k as usize)
            .copied()
            .unwrap_or(Err(RayError::NoSuchAgent))
    };
    let pairs: Vec<[u32; 2]> = pairs
        .iter()
        .map(|&[a, b]| match (eye(a), eye(b)) {
            (Ok(pa), Ok(pb)) if point_order(pb, pa).is_lt() => [b, a],
            _ => [a, b],
        })
        .collect();
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
        let segment = eye(a).and_then(|(p, ps)| {
            let (q, qs) = eye(b)?;
            VoxelRay::sight_line(p, ps, q, qs)
        });
        match segment {
            Ok(seg) => {
                host_segments.push(seg);
                host_index.push(i as u32);
            }
            Err(e) => visibility.set(i, LineOfSight::Invalid(e)),
        }
    }
    let gpu_pairs = on_gpu.len() as u64;
    let flight = if on_gpu.is_empty() {
        None
    } else {
        let mut params = world.params();
        params.details = u32::from(answers);
        let binding = launch.binding(
            ENTRY,
            option_flags(&opts.raycast, opts.conservative) | world.walk_flags(long),
            params,
            &opts.raycast,
        )?;
        Some(launch.flight(
            binding,
            PairUpload {
                pairs: on_gpu,
                agents: agents.buffer.clone(),
                details: answers,
            },
        )?)
    };
    let (host_leg, host_rays) = ray_leg(
        launch,
        &host_segments,
        &opts.raycast,
        opts.conservative,
        Vec::<LineOfSight>::new(),
    )?;
    let collector = PairAnswers {
        visibility,
        gpu: gpu_index,
        host: host_index,
        starts,
        window: *w,
    };
    let job = Joined {
        a: Leg::new(flight, collector),
        b: host_leg,
        join: PairAnswers::join,
    };
    Ok((job, gpu_pairs + host_rays))
}

/// A visibility batch's job: the shader's pairs, and the host's segments.
pub(super) type PairJob =
    Joined<Leg<PairUpload, PairAnswers>, Leg<RayUpload, RayAnswers<LineOfSight>>, Visibility>;
