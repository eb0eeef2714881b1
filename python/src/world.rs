//! `World`: a voxel world on the host, filled from numpy arrays and the importers, its edits
//! remembered per chunk for the uploads that follow it (`caster::Caster`).

use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustc_hash::FxHashMap;
use voxcast::{
    BlockShape, CHUNK_EDGE, CHUNK_VOLUME, Chunk, ChunkPos, ShapeBox, VoxelId, VoxelWorld, WorldPos,
};

use crate::batch;
use crate::cast::{on_pool, rows3};

/// A voxel as three Python ints.
type Triple = (i128, i128, i128);

/// A box's low and high corners, in sixteenths of the voxel.
type Corners = ([u8; 3], [u8; 3]);

/// A voxel world on the host: chunks of 32³ voxel ids in the i128 world, answered by the
/// CPU reference. Every edit is remembered per chunk, so that each upload of it to a GPU
/// (`caster::Caster`) brings over just what changed.
#[pyclass(module = "voxcast._voxcast")]
pub(crate) struct World {
    pub(crate) world: VoxelWorld,
    /// Per chunk, the edit count at its last change.
    changed: FxHashMap<ChunkPos, u64>,
    /// How many edits the world has had.
    pub(crate) version: u64,
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
    pub(crate) fn changed_since(&self, seen: u64) -> Vec<ChunkPos> {
        self.changed
            .iter()
            .filter(|&(_, &v)| v > seen)
            .map(|(&c, _)| c)
            .collect()
    }
}

/// `frame + v`, or a `ValueError` naming row `i` of `name`.
/// How long a waiting edit or batch sleeps, without the GIL, between looks at the world.
const WAIT: std::time::Duration = std::time::Duration::from_micros(200);

/// The world borrowed for an edit: waits, without the GIL, until the batches that other
/// Python threads cast on it have ended (a batch reads the world for its whole length).
/// Ctrl-C stops the wait with `KeyboardInterrupt`, the world unchanged.
pub(crate) fn edit<'py>(world: &Bound<'py, World>) -> PyResult<PyRefMut<'py, World>> {
    wait_for(world.py(), || world.try_borrow_mut().ok())
}

/// The world borrowed for a batch: waits, without the GIL, for an edit that another Python
/// thread is making (loading chunks builds them without the GIL). Ctrl-C stops the wait.
pub(crate) fn read<'py>(world: &Bound<'py, World>) -> PyResult<PyRef<'py, World>> {
    wait_for(world.py(), || world.try_borrow().ok())
}

/// `take()` once it gives something, looking again every [`WAIT`] without the GIL.
fn wait_for<T>(py: Python<'_>, mut take: impl FnMut() -> Option<T>) -> PyResult<T> {
    loop {
        if let Some(t) = take() {
            return Ok(t);
        }
        py.detach(|| std::thread::sleep(WAIT));
        py.check_signals()?;
    }
}

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
        shapes: bool,
    ) -> PyResult<(Self, Vec<(String, u16)>)> {
        let origin = batch::frame_of(origin, "origin")?;
        let names = if properties || shapes {
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
        let mut world = world;
        if shapes {
            palette
                .apply_shapes(&mut world, voxcast_import::shapes::block_shape)
                .map_err(|e| PyValueError::new_err(format!("shapes: {e}")))?;
        }
        let names = palette.iter().map(|(n, id)| (n.to_owned(), id.0)).collect();
        Ok((Self::of(world), names))
    }

    /// Sets the shape of `id`: `kind` "cube", "empty" or "boxes" (then `boxes`, each a low
    /// and a high corner in sixteenths of the voxel).
    fn set_shape(slf: &Bound<'_, Self>, id: u16, kind: &str, boxes: Vec<Corners>) -> PyResult<()> {
        let shape = match kind {
            "cube" => BlockShape::Cube,
            "empty" => BlockShape::Empty,
            "boxes" => BlockShape::Boxes(
                boxes
                    .into_iter()
                    .map(|(lo, hi)| ShapeBox::new(lo, hi))
                    .collect::<Result<_, _>>()
                    .map_err(|e| PyValueError::new_err(format!("boxes: {e}")))?,
            ),
            other => {
                return Err(PyValueError::new_err(format!(
                    "shape: \"cube\", \"empty\" or boxes, not {other:?}"
                )));
            }
        };
        let mut this = edit(slf)?;
        this.world
            .set_shape(VoxelId(id), &shape)
            .map_err(|e| PyValueError::new_err(format!("shape of id {id}: {e}")))?;
        // A change the GPU copy must take (`GpuWorld::update_chunks` takes the shapes).
        this.version += 1;
        Ok(())
    }

    /// The shape of `id`: its kind ("cube", "empty", "boxes") and boxes.
    fn shape(&self, id: u16) -> (&'static str, Vec<Corners>) {
        match self.world.shape(VoxelId(id)) {
            BlockShape::Cube => ("cube", Vec::new()),
            BlockShape::Empty => ("empty", Vec::new()),
            BlockShape::Boxes(b) => ("boxes", b.iter().map(|b| (b.min(), b.max())).collect()),
        }
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
        slf: &Bound<'_, Self>,
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
        let mut this = edit(slf)?;
        let world = &this.world;
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
        this.world
            .insert_chunks(chunks)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        this.note_changes();
        Ok(())
    }

    /// Loads whole chunks: `ids[k]` (indexed `[x, y, z]`, 32 each) at chunk `chunks[k]`
    /// (int64 chunk coordinates from the chunk `frame`, Python ints), replacing what was
    /// there; a later chunk at the same position replaces an earlier one.
    fn load_chunks(
        slf: &Bound<'_, Self>,
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
        let mut this = edit(slf)?;
        this.world
            .insert_chunks(loaded)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        this.note_changes();
        Ok(())
    }

    /// Sets voxel `voxels[i]` (int64, from `frame`) to `ids[i]`; a voxel of an unloaded chunk
    /// loads that chunk (air elsewhere).
    fn set_voxels(
        slf: &Bound<'_, Self>,
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
        let mut this = edit(slf)?;
        for (p, &id) in at.into_iter().zip(ids.iter()) {
            this.world.set_voxel(p, VoxelId(id));
        }
        this.note_changes();
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
    fn set_skip_empty_bricks(slf: &Bound<'_, Self>, skip: Option<bool>) -> PyResult<()> {
        let mut this = edit(slf)?;
        this.skip_set = skip;
        this.world.set_skip_empty_bricks(skip);
        Ok(())
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
}
