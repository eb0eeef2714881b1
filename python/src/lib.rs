//! The native module of the `voxcast` Python package (`voxcast._voxcast`): worlds, batches on
//! the CPU reference and on the GPU, and sensor rigs, over numpy arrays. The package's Python
//! side (`python/voxcast/__init__.py`) checks and converts the arguments and names the answers;
//! this module expects C-contiguous arrays of the dtypes its stubs (`_voxcast.pyi`) give.

mod batch;
mod cast;
mod caster;
mod world;

use numpy::ndarray::{Array, IxDyn};
use numpy::{IntoPyArray, PyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::batch::Columns;

/// `v` as a numpy array of `shape`.
fn array<'py, T: numpy::Element>(
    py: Python<'py>,
    v: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let a = Array::from_shape_vec(IxDyn(shape), v)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py))
}

/// The columns as a tuple of arrays, the rows shaped `rows` (`(N,)` or `(A, R)`):
/// `(status, voxel, normal, distance, id, uv, errors)`, `errors` a list of (flat row,
/// message).
fn columns<'py>(py: Python<'py>, c: Columns, rows: &[usize]) -> PyResult<Bound<'py, PyTuple>> {
    let with = |k: usize| -> Vec<usize> { rows.iter().copied().chain([k]).collect() };
    let items: Vec<Bound<'py, PyAny>> = vec![
        array(py, c.status, rows)?.into_any(),
        array(py, c.voxel, &with(3))?.into_any(),
        array(py, c.normal, &with(3))?.into_any(),
        array(py, c.distance, rows)?.into_any(),
        array(py, c.id, rows)?.into_any(),
        array(py, c.uv, &with(2))?.into_any(),
        c.errors.into_pyobject(py)?.into_any(),
    ];
    PyTuple::new(py, items)
}

/// Whether rays pass through a Minecraft block of this name (air, water, glass, leaves,
/// plants and the like), as voxcast-import's `anvil::see_through` decides.
#[pyfunction]
fn minecraft_see_through(name: &str) -> bool {
    voxcast_import::anvil::see_through(name)
}

/// Runs the CPU's batches on `threads` threads from now on (0: one a core, the default).
#[pyfunction]
fn set_threads(threads: usize) -> PyResult<()> {
    cast::set_threads(threads)
}

/// The unit direction of each pixel's ray of a camera looking along `forward` with `up` (as
/// `raycast_camera` makes them), row by row from the top: float32 `(height, width, 3)`.
#[pyfunction]
fn camera_directions<'py>(
    py: Python<'py>,
    forward: [f32; 3],
    up: [f32; 3],
    fov_y_degrees: f32,
    width: u32,
    height: u32,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let c = batch::camera(
        voxcast::WorldPos::ZERO,
        voxcast::glam::Vec3::splat(0.5),
        forward,
        up,
        fov_y_degrees,
        [width, height],
        1.0,
    )?;
    let dirs: Vec<f32> = (0..height)
        .flat_map(|y| (0..width).flat_map(move |x| c.pixel_dir(x, y).to_array()))
        .collect();
    array(py, dirs, &[height as usize, width as usize, 3])
}

#[pymodule]
fn _voxcast(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<world::World>()?;
    m.add_class::<caster::Caster>()?;
    m.add_class::<caster::Gpu>()?;
    m.add_class::<caster::Rig>()?;
    m.add_function(wrap_pyfunction!(minecraft_see_through, m)?)?;
    m.add_function(wrap_pyfunction!(set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(camera_directions, m)?)?;
    m.add("MISS", batch::MISS)?;
    m.add("HIT", batch::HIT)?;
    m.add("UNLOADED", batch::UNLOADED)?;
    m.add("INVALID", batch::INVALID)?;
    m.add("MAX_RIG_PART", voxcast::MAX_RIG_RAYS)?;
    m.add("MAX_DISTANCE", voxcast::MAX_DISTANCE_CAP)?;
    Ok(())
}
