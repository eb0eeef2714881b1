//! The batch calls as Python sees them: a `Caster` answers them on the CPU reference over a
//! `World`, or on a `Gpu` over that world's upload, which it keeps in step with the world's
//! edits. `Gpu` makes the GPU ones; `Rig` is a sensor rig, uploaded once per raycaster.

use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

use numpy::{PyArrayDyn, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use voxcast::gpu::{GpuConfig, GpuRaycaster, GpuSensorRig};
use voxcast::{LidarEffects, LidarReturn, LineOfSightOptions, RaycastOptions, SensorRig};

use crate::batch;
use crate::cast::{Target, on_pool, rows3};
use crate::world::World;

/// The options of a call as the package passes them: `(origin_policy, unloaded, solid,
/// conservative)`, the keyword arguments of its Python call.
#[derive(FromPyObject)]
struct Options(String, String, Option<Vec<u16>>, bool);

impl Options {
    fn raycast(self) -> PyResult<RaycastOptions> {
        batch::options(&self.0, &self.1, self.2)
    }

    fn sight(self) -> PyResult<LineOfSightOptions> {
        let conservative = self.3;
        Ok(LineOfSightOptions {
            raycast: self.raycast()?,
            conservative,
        })
    }
}

/// Where a caster's batches are answered.
enum On {
    /// The CPU reference over the world itself.
    Cpu,
    /// A GPU raycaster over an upload of the world: batches read the upload together,
    /// bringing it up to date takes it alone.
    Gpu {
        gpu: Arc<GpuRaycaster>,
        upload: Box<RwLock<Upload>>,
    },
}

/// A world's upload and the world's version it holds.
struct Upload {
    on_gpu: voxcast::gpu::GpuWorld,
    seen: u64,
}

/// A `World`'s batch calls, answered on the CPU (`Caster(world)`) or on a GPU
/// (`Gpu.upload(world)`), with the same answers.
#[pyclass(module = "voxcast._voxcast")]
pub(crate) struct Caster {
    world: Py<World>,
    on: On,
}

impl Caster {
    /// The raycaster the caster's batches go to, if a GPU's.
    fn gpu(&self) -> Option<Arc<GpuRaycaster>> {
        match &self.on {
            On::Cpu => None,
            On::Gpu { gpu, .. } => Some(Arc::clone(gpu)),
        }
    }

    /// Runs `call` (a batch of `n` rays) on this caster's target without the GIL, after
    /// bringing a GPU upload up to date with the world's edits. Batches from several Python
    /// threads run together.
    fn run<R: Send>(
        &self,
        py: Python<'_>,
        n: usize,
        call: impl FnOnce(&Target<'_>) -> PyResult<R> + Send,
    ) -> PyResult<R> {
        let world = crate::world::read(self.world.bind(py))?;
        match &self.on {
            On::Cpu => {
                let target = Target::Cpu(&world.world);
                crate::cast::interruptible(py, n, || on_pool(n, || call(&target)))?
            }
            On::Gpu { gpu, upload } => {
                fn poisoned<T>(_: T) -> PyErr {
                    PyRuntimeError::new_err("a GPU update panicked")
                }
                if upload.read().map_err(poisoned)?.seen != world.version {
                    let mut up = upload.write().map_err(poisoned)?;
                    if up.seen != world.version {
                        let chunks = world.changed_since(up.seen);
                        up.on_gpu
                            .update_or_rebuild(&world.world, &chunks)
                            .map_err(|e| PyRuntimeError::new_err(format!("GPU update: {e}")))?;
                        up.seen = world.version;
                    }
                }
                let up = upload.read().map_err(poisoned)?;
                let target = Target::Gpu(gpu, &up.on_gpu);
                py.detach(|| call(&target))
            }
        }
    }

    /// [`Caster::run`] for a call of `rig` from `agents` poses: `call` also receives the
    /// parts of `rig` uploaded to this caster's GPU (empty on the CPU), uploaded first where
    /// they are not yet.
    fn run_rig<R: Send>(
        &self,
        py: Python<'_>,
        rig: &Rig,
        agents: usize,
        call: impl FnOnce(&Target<'_>, &[GpuSensorRig]) -> PyResult<R> + Send,
    ) -> PyResult<R> {
        let uploaded = match self.gpu() {
            Some(gpu) => Some(rig.uploaded(&gpu)?),
            None => None,
        };
        let gpu_rigs = uploaded
            .as_deref()
            .and_then(Option::as_ref)
            .map_or(&[][..], |(_, r)| r.as_slice());
        self.run(py, agents * rig.len(), |t| call(t, gpu_rigs))
    }
}

#[pymethods]
impl Caster {
    /// The CPU reference's calls over `world`.
    #[new]
    fn new(world: Py<World>) -> Self {
        Self { world, on: On::Cpu }
    }

    /// The `World` this caster answers for.
    #[getter]
    fn world(&self, py: Python<'_>) -> Py<World> {
        self.world.clone_ref(py)
    }

    fn raycast<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        origins: PyReadonlyArray2<'_, f64>,
        directions: PyReadonlyArray2<'_, f32>,
        max_distance: PyReadonlyArray1<'_, f32>,
        options: Options,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.raycast()?;
        let (o, d, m) = (
            origins.as_array(),
            directions.as_array(),
            max_distance.as_array(),
        );
        let n = o.nrows();
        let c = self.run(py, n, |t| t.raycast(frame, o, d, m, &opts))?;
        crate::columns(py, c, &[n])
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "a camera has this many independent parameters"
    )]
    fn raycast_camera<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        position: [f64; 3],
        forward: [f32; 3],
        up: [f32; 3],
        fov_y_degrees: f32,
        width: u32,
        height: u32,
        max_distance: f32,
        options: Options,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.raycast()?;
        let (eye, sub) = batch::point(frame, position)
            .map_err(|e| PyValueError::new_err(format!("position: {}", e.message())))?;
        let camera = batch::camera(
            eye,
            sub,
            forward,
            up,
            fov_y_degrees,
            [width, height],
            max_distance,
        )?;
        let n = width as usize * height as usize;
        let c = self.run(py, n, |t| t.camera(frame, &camera, &opts))?;
        crate::columns(py, c, &[height as usize, width as usize])
    }

    fn line_of_sight<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        a: PyReadonlyArray2<'_, f64>,
        b: PyReadonlyArray2<'_, f64>,
        options: Options,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.sight()?;
        let (a, b) = (a.as_array(), b.as_array());
        let n = a.nrows();
        let c = self.run(py, n, |t| t.line_of_sight(frame, a, b, &opts))?;
        crate::columns(py, c, &[n])
    }

    fn agent_visibility<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        eyes: PyReadonlyArray2<'_, f64>,
        pairs: PyReadonlyArray2<'_, i64>,
        options: Options,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.sight()?;
        let (e, p) = (eyes.as_array(), pairs.as_array());
        let n = p.nrows();
        let c = self.run(py, n, |t| t.agent_visibility(frame, e, p, &opts))?;
        crate::columns(py, c, &[n])
    }

    fn visible_pairs_within<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        eyes: PyReadonlyArray2<'_, f64>,
        radius: f64,
        options: Options,
    ) -> PyResult<Bound<'py, PyArrayDyn<u32>>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.sight()?;
        let e = eyes.as_array();
        let pairs = self.run(py, usize::MAX, |t| {
            t.visible_pairs_within(frame, e, radius, &opts)
        })?;
        let n = pairs.len();
        crate::array(py, pairs.into_iter().flatten().collect(), &[n, 2])
    }

    fn sense<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        rig: &Rig,
        poses: PyReadonlyArray2<'_, f64>,
        options: Options,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.raycast()?;
        let poses = poses.as_array();
        let (c, points) = self.run_rig(py, rig, poses.nrows(), |t, gpu_rigs| {
            t.sense(frame, &rig.parts, gpu_rigs, poses, &opts)
        })?;
        let rows = [poses.nrows(), rig.len()];
        let cols = crate::columns(py, c, &rows)?;
        let points = crate::array(py, points, &[rows[0], rows[1], 3])?;
        PyTuple::new(py, [cols.into_any(), points.into_any()])
    }

    /// A LiDAR scan of `rig` (beams of `sub_rays` rays) from `poses` with the effects
    /// `(returns, reflectivity by id, default reflectivity, range noise, dropout, min
    /// intensity, seed)`, drawn for `step`: `(status, ranges, points, intensity, id, errors)`,
    /// `(A, B)` each (points `(A, B, 3)`), errors `(agent, why)`.
    #[expect(clippy::too_many_arguments, reason = "a scan's inputs, each needed")]
    fn lidar_scan<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'_, PyAny>,
        rig: &Rig,
        poses: PyReadonlyArray2<'_, f64>,
        options: Options,
        sub_rays: usize,
        effects: (String, Vec<f32>, f32, f32, f32, f32, u64),
        step: u64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let frame = batch::frame_of(frame, "frame")?;
        let opts = options.raycast()?;
        let (
            returns,
            reflectivity,
            default_reflectivity,
            range_noise,
            dropout,
            min_intensity,
            seed,
        ) = effects;
        let returns = match returns.as_str() {
            "first" => LidarReturn::First,
            "last" => LidarReturn::Last,
            "strongest" => LidarReturn::Strongest,
            other => {
                return Err(PyValueError::new_err(format!(
                    "returns: \"first\", \"last\" or \"strongest\", not {other:?}"
                )));
            }
        };
        let fx = LidarEffects {
            returns,
            reflectivity,
            default_reflectivity,
            range_noise,
            dropout,
            min_intensity,
            seed,
        };
        let poses = poses.as_array();
        let c = self.run_rig(py, rig, poses.nrows(), |t, gpu_rigs| {
            t.lidar(
                frame, &rig.parts, gpu_rigs, poses, &opts, &fx, sub_rays, step,
            )
        })?;
        let rows = [poses.nrows(), rig.len() / sub_rays.max(1)];
        PyTuple::new(
            py,
            [
                crate::array(py, c.status, &rows)?.into_any(),
                crate::array(py, c.ranges, &rows)?.into_any(),
                crate::array(py, c.points, &[rows[0], rows[1], 3])?.into_any(),
                crate::array(py, c.intensity, &rows)?.into_any(),
                crate::array(py, c.id, &rows)?.into_any(),
                c.errors.into_pyobject(py)?.into_any(),
            ],
        )
    }
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

    /// Whether the adapter runs on the CPU (lavapipe, llvmpipe, SwiftShader).
    #[getter]
    fn is_software(&self) -> bool {
        self.gpu.is_software()
    }

    /// `world` uploaded whole, as a caster whose calls follow the world's later edits.
    fn upload(&self, py: Python<'_>, world: Py<World>) -> PyResult<Caster> {
        let (on_gpu, seen) = {
            let w = crate::world::read(world.bind(py))?;
            let on_gpu = self
                .gpu
                .upload_world(&w.world)
                .map_err(|e| PyRuntimeError::new_err(format!("GPU upload: {e}")))?;
            (on_gpu, w.version)
        };
        Ok(Caster {
            world,
            on: On::Gpu {
                gpu: Arc::clone(&self.gpu),
                upload: Box::new(RwLock::new(Upload { on_gpu, seen })),
            },
        })
    }
}

/// A rig's parts as uploaded to a raycaster, and that raycaster (held weakly: while it is held,
/// no other raycaster can take its place in memory and be mistaken for it).
type Uploaded = (Weak<GpuRaycaster>, Vec<GpuSensorRig>);

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
        let mut held = self
            .on_gpu
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a rig's GPU upload panicked"))?;
        if held
            .as_ref()
            .is_none_or(|(on, _)| !Weak::ptr_eq(on, &Arc::downgrade(gpu)))
        {
            let parts = self
                .parts
                .iter()
                .map(|p| gpu.upload_rig(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| PyRuntimeError::new_err(format!("GPU rig upload: {e}")))?;
            *held = Some((Arc::downgrade(gpu), parts));
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
