//! The Python classes: `World` (a voxel world on the host, answered by the CPU reference),
//! `Gpu` (a GPU raycaster), `GpuWorld` (a world as uploaded to it, kept in step with its
//! `World`) and `Rig` (a sensor rig's directions, quantized as the GPU reads them).

use std::sync::{Arc, Mutex, MutexGuard};

use numpy::ndarray::ArrayView2;
use numpy::{PyArrayDyn, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustc_hash::FxHashMap;
use voxcast::gpu::{GpuConfig, GpuRaycaster, GpuSensorRig};
use voxcast::{
    CHUNK_EDGE, CHUNK_VOLUME, Chunk, ChunkPos, LineOfSightOptions, RaycastOptions, SensorRig,
    VoxelId, VoxelWorld, WorldPos,
};

use crate::batch::{self, Columns};
use crate::cast::{Target, on_pool, rows3};

/// The options of a call, from its keyword arguments.
fn opts(origin_policy: &str, unloaded: &str, solid: Option<Vec<u16>>) -> PyResult<RaycastOptions> {
    batch::options(origin_policy, unloaded, solid)
}

/// A voxel as three Python ints.
type Triple = (i128, i128, i128);

/// A voxel world on the host: chunks of 32³ voxel ids in the i128 world, answered by the
/// CPU reference. Every edit is remembered per chunk, so that each upload of it to a GPU
/// (`GpuWorld`) brings over just what changed.
#[pyclass(module = "voxcast._voxcast")]
pub(crate) struct World {
    world: VoxelWorld,
    /// Per chunk, the edit count at its last change.
    changed: FxHashMap<ChunkPos, u64>,
    /// How many edits the world has had.
    version: u64,
    /// The caller's choice of walk ([`VoxelWorld::set_skip_empty_bricks`]).
    skip_set: Option<bool>,
}

impl World {
    fn of(mut world: VoxelWorld) -> Self {
        world.set_track_changes(true);
        let mut w = Self {
            world,
            changed: FxHashMap::default(),
            version: 0,
            skip_set: None,
        };
        w.note_changes();
        w
    }

    /// Moves the world's changed chunks into `changed` under a new version.
    fn note_changes(&mut self) {
        let chunks = self.world.take_changed_chunks();
        if chunks.is_empty() {
            return;
        }
        self.version += 1;
        for c in chunks {
            self.changed.insert(c, self.version);
        }
    }

    /// The chunks changed after version `seen`.
    fn changed_since(&self, seen: u64) -> Vec<ChunkPos> {
        self.changed
            .iter()
            .filter(|&(_, &v)| v > seen)
            .map(|(&c, _)| c)
            .collect()
    }
}

/// `frame + v`, or a `ValueError` naming row `i` of `name`.
fn voxel_at(frame: WorldPos, v: [i64; 3], name: &str, i: usize) -> PyResult<WorldPos> {
    frame.checked_add(v.map(i128::from)).ok_or_else(|| {
        PyValueError::new_err(format!("{name}: row {i} lies outside the i128 world"))
    })
}

fn import_error(e: voxcast_import::ImportError) -> PyErr {
    match e {
        voxcast_import::ImportError::Io { .. } => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

#[pymethods]
impl World {
    /// An empty world: every chunk unloaded.
    #[new]
    fn new() -> Self {
        Self::of(VoxelWorld::new())
    }

    /// A Minecraft region file (`r.X.Z.mca`) or a folder of them, at `origin`; returns the
    /// world and the palette as a list of (block name, id).
    #[staticmethod]
    fn from_minecraft(
        path: std::path::PathBuf,
        origin: &Bound<'_, PyAny>,
        properties: bool,
    ) -> PyResult<(Self, Vec<(String, u16)>)> {
        let origin = batch::frame_of(origin, "origin")?;
        let names = if properties {
            voxcast_import::anvil::Names::WithProperties
        } else {
            voxcast_import::anvil::Names::Plain
        };
        let mut palette = voxcast_import::Palette::new();
        let world = if path.is_dir() {
            voxcast_import::anvil::folder(&path, origin, &mut palette, names)
        } else {
            let bytes = std::fs::read(&path)
                .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
            voxcast_import::anvil::region(&bytes, origin, &mut palette, names)
        }
        .map_err(import_error)?;
        let names = palette.iter().map(|(n, id)| (n.to_owned(), id.0)).collect();
        Ok((Self::of(world), names))
    }

    /// A MagicaVoxel model (`.vox`), its voxel (x, y, z) at `origin + (x, z, -y - 1)`.
    #[staticmethod]
    fn from_magica(path: std::path::PathBuf, origin: &Bound<'_, PyAny>) -> PyResult<Self> {
        let origin = batch::frame_of(origin, "origin")?;
        let bytes = std::fs::read(&path)
            .map_err(|e| PyOSError::new_err(format!("{}: {e}", path.display())))?;
        Ok(Self::of(
            voxcast_import::vox::model(&bytes, origin).map_err(import_error)?,
        ))
    }

    /// Writes the dense block `ids` (indexed `[x, y, z]`) with its voxel `[0, 0, 0]` at
    /// `origin`: every chunk it touches is loaded, voxels of those chunks outside the block
    /// keep their ids (air where the chunk was unloaded).
    fn load_dense(
        &mut self,
        py: Python<'_>,
        ids: PyReadonlyArray3<'_, u16>,
        origin: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let origin = batch::frame_of(origin, "origin")?;
        let ids = ids.as_array();
        let shape = ids.shape();
        let size = [shape[0] as i128, shape[1] as i128, shape[2] as i128];
        if size.contains(&0) {
            return Ok(());
        }
        let last = origin
            .checked_add([size[0] - 1, size[1] - 1, size[2] - 1])
            .ok_or_else(|| {
                PyValueError::new_err("ids: the block reaches outside the i128 world")
            })?;
        let (lo, hi) = (origin.chunk(), last.chunk());
        let span = [hi.x - lo.x + 1, hi.y - lo.y + 1, hi.z - lo.z + 1];
        let count = span[0]
            .checked_mul(span[1])
            .and_then(|n| n.checked_mul(span[2]))
            .filter(|&n| n <= 1 << 24)
            .ok_or_else(|| PyValueError::new_err("ids: the block covers too many chunks"))?;
        let positions: Vec<ChunkPos> = (0..count)
            .map(|k| {
                ChunkPos::new(
                    lo.x + k % span[0],
                    lo.y + (k / span[0]) % span[1],
                    lo.z + k / (span[0] * span[1]),
                )
            })
            .filter(|c| c.is_in_world())
            .collect();
        let world = &self.world;
        let chunks: Vec<(ChunkPos, Chunk)> = py.detach(|| {
            on_pool(usize::MAX, || {
                use rayon::prelude::*;
                positions
                    .par_iter()
                    .map(|&c| {
                        let base = c.origin();
                        let mut out = vec![VoxelId::AIR; CHUNK_VOLUME];
                        if let Some(old) = world.chunk(c) {
                            for (i, v) in out.iter_mut().enumerate() {
                                *v = old.get(voxcast::LocalPos::from_index(i));
                            }
                        }
                        for z in 0..CHUNK_EDGE {
                            for y in 0..CHUNK_EDGE {
                                for x in 0..CHUNK_EDGE {
                                    let d = [
                                        base.x + x - origin.x,
                                        base.y + y - origin.y,
                                        base.z + z - origin.z,
                                    ];
                                    if (0..3).all(|a| d[a] >= 0 && d[a] < size[a]) {
                                        let id = ids[(d[0] as usize, d[1] as usize, d[2] as usize)];
                                        out[(x + CHUNK_EDGE * y + CHUNK_EDGE * CHUNK_EDGE * z)
                                            as usize] = VoxelId(id);
                                    }
                                }
                            }
                        }
                        let chunk = Chunk::from_ids(&out).expect("CHUNK_VOLUME ids");
                        (c, chunk)
                    })
                    .collect()
            })
        });
        self.world
            .insert_chunks(chunks)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.note_changes();
        Ok(())
    }

    /// Loads whole chunks: `ids[k]` (indexed `[x, y, z]`, 32 each) at chunk `chunks[k]`
    /// (int64 chunk coordinates from the chunk `frame`, Python ints), replacing what was
    /// there; a later chunk at the same position replaces an earlier one.
    fn load_chunks(
        &mut self,
        py: Python<'_>,
        frame: &Bound<'_, PyAny>,
        chunks: PyReadonlyArray2<'_, i64>,
        ids: numpy::PyReadonlyArray4<'_, u16>,
    ) -> PyResult<()> {
        let frame = batch::frame_of(frame, "frame")?;
        let chunks = chunks.as_array();
        let ids = ids.as_array();
        let n = rows3(&chunks, "chunks")?;
        let edge = CHUNK_EDGE as usize;
        if ids.shape() != [n, edge, edge, edge] {
            return Err(PyValueError::new_err(format!(
                "ids: shape ({n}, 32, 32, 32), not {:?}",
                ids.shape()
            )));
        }
        let positions: Vec<ChunkPos> = (0..n)
            .map(|k| {
                let c = [chunks[(k, 0)], chunks[(k, 1)], chunks[(k, 2)]];
                let p = voxel_at(frame, c, "chunks", k)?;
                let pos = ChunkPos::new(p.x, p.y, p.z);
                if pos.is_in_world() {
                    Ok(pos)
                } else {
                    Err(PyValueError::new_err(format!(
                        "chunks: row {k} is no chunk of the i128 world"
                    )))
                }
            })
            .collect::<PyResult<_>>()?;
        let loaded: Vec<(ChunkPos, Chunk)> = py.detach(|| {
            on_pool(usize::MAX, || {
                use rayon::prelude::*;
                positions
                    .par_iter()
                    .enumerate()
                    .map(|(k, &pos)| {
                        let mut local = vec![VoxelId::AIR; CHUNK_VOLUME];
                        for ((x, y, z), &id) in
                            ids.index_axis(numpy::ndarray::Axis(0), k).indexed_iter()
                        {
                            local[x + edge * y + edge * edge * z] = VoxelId(id);
                        }
                        (pos, Chunk::from_ids(&local).expect("CHUNK_VOLUME ids"))
                    })
                    .collect()
            })
        });
        self.world
            .insert_chunks(loaded)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.note_changes();
        Ok(())
    }

    /// Sets voxel `voxels[i]` (int64, from `frame`) to `ids[i]`; a voxel of an unloaded chunk
    /// loads that chunk (air elsewhere).
    fn set_voxels(
        &mut self,
        frame: &Bound<'_, PyAny>,
        voxels: PyReadonlyArray2<'_, i64>,
        ids: PyReadonlyArray1<'_, u16>,
    ) -> PyResult<()> {
        let frame = batch::frame_of(frame, "frame")?;
        let voxels = voxels.as_array();
        let ids = ids.as_array();
        let n = rows3(&voxels, "voxels")?;
        if ids.len() != n {
            return Err(PyValueError::new_err(format!(
                "ids: one per voxel ({n}), not {}",
                ids.len()
            )));
        }
        let at: Vec<WorldPos> = (0..n)
            .map(|i| {
                voxel_at(
                    frame,
                    [voxels[(i, 0)], voxels[(i, 1)], voxels[(i, 2)]],
                    "voxels",
                    i,
                )
            })
            .collect::<PyResult<_>>()?;
        for (p, &id) in at.into_iter().zip(ids.iter()) {
            self.world.set_voxel(p, VoxelId(id));
        }
        self.note_changes();
        Ok(())
    }

    /// The ids of `voxels` (int64, from `frame`) and whether each one's chunk is loaded.
    fn get_voxels<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        voxels: PyReadonlyArray2<'_, i64>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let voxels = voxels.as_array();
        let n = rows3(&voxels, "voxels")?;
        let mut ids = Vec::with_capacity(n);
        let mut loaded = Vec::with_capacity(n);
        for i in 0..n {
            let p = voxel_at(
                frame,
                [voxels[(i, 0)], voxels[(i, 1)], voxels[(i, 2)]],
                "voxels",
                i,
            )?;
            let id = self.world.get_voxel(&p);
            ids.push(id.map_or(0, |v| v.0));
            loaded.push(id.is_some());
        }
        PyTuple::new(
            py,
            [
                crate::array(py, ids, &[n])?.into_any(),
                crate::array(py, loaded, &[n])?.into_any(),
            ],
        )
    }

    /// How many chunks are loaded.
    #[getter]
    fn chunk_count(&self) -> usize {
        self.world.chunk_count()
    }

    /// Whether rays skip empty 8³ bricks whole: `True`, `False`, or `None` (the default) to
    /// let each ray's length and the world's air decide. Answers do not change, only speed.
    #[getter]
    fn get_skip_empty_bricks(&self) -> Option<bool> {
        self.skip_set
    }

    #[setter]
    fn set_skip_empty_bricks(&mut self, skip: Option<bool>) {
        self.skip_set = skip;
        self.world.set_skip_empty_bricks(skip);
    }

    /// The inclusive voxel box `((x, y, z), (x, y, z))` of every loaded chunk (Python ints),
    /// or `None` when nothing is loaded.
    #[getter]
    fn loaded_bounds(&self) -> Option<(Triple, Triple)> {
        self.world
            .loaded_bounds()
            .map(|b| ((b.min.x, b.min.y, b.min.z), (b.max.x, b.max.y, b.max.z)))
    }

    /// Bytes of host memory the world takes.
    #[getter]
    fn memory_bytes(&self) -> u64 {
        self.world.memory_bytes()
    }

    #[pyo3(signature = (frame, origins, directions, max_distance, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn raycast<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        origins: PyReadonlyArray2<'_, f64>,
        directions: PyReadonlyArray2<'_, f32>,
        max_distance: PyReadonlyArray1<'_, f32>,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = opts(origin_policy, unloaded, solid)?;
        let (o, d, m) = (
            origins.as_array(),
            directions.as_array(),
            max_distance.as_array(),
        );
        let n = o.nrows();
        let c = py.detach(|| {
            on_pool(n, || {
                Target::Cpu(&self.world).raycast(frame, o, d, m, &opts)
            })
        })?;
        crate::columns(py, c, &[n])
    }

    #[pyo3(signature = (frame, a, b, conservative, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn line_of_sight<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        a: PyReadonlyArray2<'_, f64>,
        b: PyReadonlyArray2<'_, f64>,
        conservative: bool,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = sight_opts(origin_policy, unloaded, solid, conservative)?;
        let (a, b) = (a.as_array(), b.as_array());
        let n = a.nrows();
        let c = py.detach(|| {
            on_pool(n, || {
                Target::Cpu(&self.world).line_of_sight(frame, a, b, &opts)
            })
        })?;
        crate::columns(py, c, &[n])
    }

    #[pyo3(signature = (frame, eyes, pairs, conservative, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn agent_visibility<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        eyes: PyReadonlyArray2<'_, f64>,
        pairs: PyReadonlyArray2<'_, i64>,
        conservative: bool,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = sight_opts(origin_policy, unloaded, solid, conservative)?;
        let (e, p) = (eyes.as_array(), pairs.as_array());
        let n = p.nrows();
        let target = Target::Cpu(&self.world);
        let c = py.detach(|| on_pool(n, || target.agent_visibility(frame, e, p, &opts)))?;
        crate::columns(py, c, &[n])
    }

    #[pyo3(signature = (frame, eyes, radius, conservative, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn visible_pairs_within<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        eyes: PyReadonlyArray2<'_, f64>,
        radius: f64,
        conservative: bool,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyArrayDyn<u32>>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = sight_opts(origin_policy, unloaded, solid, conservative)?;
        let e = eyes.as_array();
        let target = Target::Cpu(&self.world);
        let pairs = py.detach(|| {
            on_pool(usize::MAX, || {
                target.visible_pairs_within(frame, e, radius, &opts)
            })
        })?;
        let n = pairs.len();
        crate::array(py, pairs.into_iter().flatten().collect(), &[n, 2])
    }

    #[pyo3(signature = (frame, rig, poses, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn sense<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        rig: &Rig,
        poses: PyReadonlyArray2<'_, f64>,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = opts(origin_policy, unloaded, solid)?;
        let poses = poses.as_array();
        let target = Target::Cpu(&self.world);
        let n = poses.nrows() * rig.len();
        let out =
            py.detach(|| on_pool(n, || target.sense(frame, &rig.parts, &[], poses, &opts)))?;
        sensed(py, out, poses, rig)
    }
}

fn sight_opts(
    origin_policy: &str,
    unloaded: &str,
    solid: Option<Vec<u16>>,
    conservative: bool,
) -> PyResult<LineOfSightOptions> {
    Ok(LineOfSightOptions {
        raycast: opts(origin_policy, unloaded, solid)?,
        conservative,
    })
}

/// A sensor call's answers as `(columns..., points)`, the rows shaped `(A, R)`.
fn sensed<'py>(
    py: Python<'py>,
    (c, points): (Columns, Vec<f64>),
    poses: ArrayView2<'_, f64>,
    rig: &Rig,
) -> PyResult<Bound<'py, PyTuple>> {
    let rows = [poses.nrows(), rig.len()];
    let cols = crate::columns(py, c, &rows)?;
    let points = crate::array(py, points, &[rows[0], rows[1], 3])?;
    PyTuple::new(py, [cols.into_any(), points.into_any()])
}

/// A GPU raycaster (wgpu: Vulkan, Metal or DX12), checked against the CPU reference when it
/// is made.
#[pyclass(frozen, module = "voxcast._voxcast")]
pub(crate) struct Gpu {
    gpu: Arc<GpuRaycaster>,
}

#[pymethods]
impl Gpu {
    /// Picks an adapter (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME` choose), makes the device and runs
    /// the self-check; `RuntimeError` when there is no adapter or the check fails.
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let gpu = py
            .detach(|| GpuRaycaster::new_blocking(GpuConfig::default()))
            .map_err(|e| PyRuntimeError::new_err(format!("no GPU raycaster: {e}")))?;
        Ok(Self { gpu: Arc::new(gpu) })
    }

    /// The adapter and the self-check's outcome, in one line.
    #[getter]
    fn adapter(&self) -> String {
        self.gpu.adapter_summary()
    }

    /// `world` uploaded whole; the upload follows the world's later edits.
    fn upload(&self, py: Python<'_>, world: Py<World>) -> PyResult<GpuWorld> {
        let (on_gpu, seen) = {
            let w = world.borrow(py);
            let on_gpu = self
                .gpu
                .upload_world(&w.world)
                .map_err(|e| PyRuntimeError::new_err(format!("GPU upload: {e}")))?;
            (on_gpu, w.version)
        };
        Ok(GpuWorld {
            gpu: Arc::clone(&self.gpu),
            on_gpu,
            world,
            seen,
        })
    }
}

/// A `World` as uploaded to a `Gpu`: its calls are the world's, answered on the GPU, after
/// bringing over the chunks edited since the last call.
#[pyclass(module = "voxcast._voxcast")]
pub(crate) struct GpuWorld {
    gpu: Arc<GpuRaycaster>,
    on_gpu: voxcast::gpu::GpuWorld,
    world: Py<World>,
    /// The world's version the upload holds.
    seen: u64,
}

impl GpuWorld {
    /// Uploads the chunks edited since the last call.
    fn sync(&mut self, py: Python<'_>) -> PyResult<()> {
        let w = self.world.borrow(py);
        if w.version != self.seen {
            let chunks = w.changed_since(self.seen);
            self.on_gpu
                .update_or_rebuild(&w.world, &chunks)
                .map_err(|e| PyRuntimeError::new_err(format!("GPU update: {e}")))?;
            self.seen = w.version;
        }
        Ok(())
    }
}

#[pymethods]
impl GpuWorld {
    /// The `World` this upload follows.
    #[getter]
    fn world(&self, py: Python<'_>) -> Py<World> {
        self.world.clone_ref(py)
    }

    #[pyo3(signature = (frame, origins, directions, max_distance, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn raycast<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        origins: PyReadonlyArray2<'_, f64>,
        directions: PyReadonlyArray2<'_, f32>,
        max_distance: PyReadonlyArray1<'_, f32>,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = opts(origin_policy, unloaded, solid)?;
        self.sync(py)?;
        let (o, d, m) = (
            origins.as_array(),
            directions.as_array(),
            max_distance.as_array(),
        );
        let n = o.nrows();
        let target = Target::Gpu(&self.gpu, &self.on_gpu);
        let c = py.detach(|| target.raycast(frame, o, d, m, &opts))?;
        crate::columns(py, c, &[n])
    }

    #[pyo3(signature = (frame, a, b, conservative, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn line_of_sight<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        a: PyReadonlyArray2<'_, f64>,
        b: PyReadonlyArray2<'_, f64>,
        conservative: bool,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = sight_opts(origin_policy, unloaded, solid, conservative)?;
        self.sync(py)?;
        let (a, b) = (a.as_array(), b.as_array());
        let n = a.nrows();
        let target = Target::Gpu(&self.gpu, &self.on_gpu);
        let c = py.detach(|| target.line_of_sight(frame, a, b, &opts))?;
        crate::columns(py, c, &[n])
    }

    #[pyo3(signature = (frame, eyes, pairs, conservative, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn agent_visibility<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        eyes: PyReadonlyArray2<'_, f64>,
        pairs: PyReadonlyArray2<'_, i64>,
        conservative: bool,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = sight_opts(origin_policy, unloaded, solid, conservative)?;
        let (e, p) = (eyes.as_array(), pairs.as_array());
        let n = p.nrows();
        self.sync(py)?;
        let target = Target::Gpu(&self.gpu, &self.on_gpu);
        let c = py.detach(|| target.agent_visibility(frame, e, p, &opts))?;
        crate::columns(py, c, &[n])
    }

    #[pyo3(signature = (frame, eyes, radius, conservative, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn visible_pairs_within<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        eyes: PyReadonlyArray2<'_, f64>,
        radius: f64,
        conservative: bool,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyArrayDyn<u32>>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = sight_opts(origin_policy, unloaded, solid, conservative)?;
        let e = eyes.as_array();
        self.sync(py)?;
        let target = Target::Gpu(&self.gpu, &self.on_gpu);
        let pairs = py.detach(|| target.visible_pairs_within(frame, e, radius, &opts))?;
        let n = pairs.len();
        crate::array(py, pairs.into_iter().flatten().collect(), &[n, 2])
    }

    #[pyo3(signature = (frame, rig, poses, origin_policy, unloaded, solid))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of a Python call"
    )]
    fn sense<'py>(
        &mut self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        rig: &Rig,
        poses: PyReadonlyArray2<'_, f64>,
        origin_policy: &str,
        unloaded: &str,
        solid: Option<Vec<u16>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = opts(origin_policy, unloaded, solid)?;
        self.sync(py)?;
        let poses = poses.as_array();
        let uploaded = rig.uploaded(&self.gpu)?;
        let gpu_rigs = uploaded.as_ref().map_or(&[][..], |(_, r)| r.as_slice());
        let target = Target::Gpu(&self.gpu, &self.on_gpu);
        let out = py.detach(|| target.sense(frame, &rig.parts, gpu_rigs, poses, &opts))?;
        drop(uploaded);
        sensed(py, out, poses, rig)
    }
}

/// A rig's parts as uploaded to the raycaster at this address.
type Uploaded = (usize, Vec<GpuSensorRig>);

/// A sensor rig: directions in the agent's frame (`-Z` forward, `+Y` up, `+X` right), each
/// with its max distance, quantized as the GPU reads them. Rigs of more than `MAX_RIG_PART`
/// rays are kept in parts of at most that many.
#[pyclass(frozen, module = "voxcast._voxcast")]
pub(crate) struct Rig {
    parts: Vec<SensorRig>,
    /// The parts as uploaded to one raycaster, made on first use there.
    on_gpu: Mutex<Option<Uploaded>>,
}

impl Rig {
    fn len(&self) -> usize {
        self.parts.iter().map(SensorRig::len).sum()
    }

    /// The parts as uploaded to `gpu`, uploading them on first use there.
    fn uploaded(&self, gpu: &Arc<GpuRaycaster>) -> PyResult<MutexGuard<'_, Option<Uploaded>>> {
        let key = Arc::as_ptr(gpu) as usize;
        let mut held = self
            .on_gpu
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a rig's GPU upload panicked"))?;
        if held.as_ref().is_none_or(|(k, _)| *k != key) {
            let parts = self
                .parts
                .iter()
                .map(|p| gpu.upload_rig(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| PyRuntimeError::new_err(format!("GPU rig upload: {e}")))?;
            *held = Some((key, parts));
        }
        Ok(held)
    }
}

#[pymethods]
impl Rig {
    /// A rig of `directions` (float32 `(R, 3)`, any finite non-zero length) and
    /// `max_distances` (float32 `(R,)`, voxels); `ValueError` naming the first bad ray.
    #[new]
    fn new(
        directions: PyReadonlyArray2<'_, f32>,
        max_distances: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Self> {
        let d = directions.as_array();
        let m = max_distances.as_array();
        let n = rows3(&d, "directions")?;
        if m.len() != n {
            return Err(PyValueError::new_err(format!(
                "max_distances: one per direction ({n}), not {}",
                m.len()
            )));
        }
        if n == 0 {
            return Err(PyValueError::new_err(
                "directions: a rig needs at least one ray",
            ));
        }
        let rays: Vec<(glam::Vec3, f32)> = (0..n)
            .map(|i| (glam::Vec3::new(d[(i, 0)], d[(i, 1)], d[(i, 2)]), m[i]))
            .collect();
        let parts = rays
            .chunks(voxcast::MAX_RIG_RAYS)
            .enumerate()
            .map(|(k, part)| {
                SensorRig::new(part).map_err(|e| {
                    let e = match e {
                        voxcast::SensorRigError::Ray { index, error } => {
                            format!("ray {}: {error}", k * voxcast::MAX_RIG_RAYS + index)
                        }
                        other => other.to_string(),
                    };
                    PyValueError::new_err(format!("directions: {e}"))
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Self {
            parts,
            on_gpu: Mutex::new(None),
        })
    }

    /// How many rays the rig has.
    fn __len__(&self) -> usize {
        self.len()
    }

    /// The rig's rays as quantized: unit directions `(R, 3)` and max distances `(R,)`.
    fn rays<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut dirs = Vec::with_capacity(3 * self.len());
        let mut max = Vec::with_capacity(self.len());
        for part in &self.parts {
            for k in 0..part.len() {
                let (d, m) = part.ray(k).expect("k < len");
                dirs.extend(d.to_array());
                max.push(m);
            }
        }
        let n = max.len();
        PyTuple::new(
            py,
            [
                crate::array(py, dirs, &[n, 3])?.into_any(),
                crate::array(py, max, &[n])?.into_any(),
            ],
        )
    }
}
