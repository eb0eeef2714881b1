//! Target `camera`: cameras built from any inputs (`Camera::new`, `with_up`, `look_at`) are
//! either refused with the error their docs name or well formed; cameras with any field edited
//! by hand give, for every pixel, exactly what `voxel_raycast_with` answers for that pixel's
//! `Camera::ray` (or `Invalid` with its error) through `raycast_camera` and its row bands,
//! and never panic, whatever their size.

use arbitrary::Arbitrary;
use voxcast::{
    Camera, CameraError, RaycastOptions, RaycastOutcome, VoxelRay, WorldPos, raycast_camera,
    raycast_camera_rows_into, voxel_raycast_with,
};

use super::input::{AnchorIn, CoordIn, F32In, FilterIn, ORIGIN_POLICIES, vec3};
use super::model::{Edit, build};
use super::oracle::identical;

/// Most pixels cast per input.
const PIXELS: u64 = 256;

/// How the camera is made.
#[derive(Arbitrary, Debug)]
pub enum Make {
    /// `Camera::new`.
    New,
    /// `Camera::with_up` with this up vector.
    WithUp([F32In; 3]),
    /// `Camera::look_at` this target (the forward field is ignored).
    LookAt([CoordIn; 3], [F32In; 3]),
}

/// A field of a camera edited by hand after it was built.
#[derive(Arbitrary, Debug)]
pub enum HandEdit {
    /// `forward`.
    Forward([F32In; 3]),
    /// `right`.
    Right([F32In; 3]),
    /// `up`.
    Up([F32In; 3]),
    /// `sub_offset`.
    Sub([F32In; 3]),
    /// `width` and `height`.
    Size(u32, u32),
    /// `scale_x` and `scale_y`.
    Scale(F32In, F32In),
    /// `max_distance`.
    Max(F32In),
}

/// One input of the target.
#[derive(Arbitrary, Debug)]
pub struct Input {
    /// Where the world is.
    pub anchor: [AnchorIn; 3],
    /// The world.
    pub edits: Vec<Edit>,
    /// The eye.
    pub position: [CoordIn; 3],
    /// The eye inside its voxel.
    pub sub: [F32In; 3],
    /// The view direction.
    pub forward: [F32In; 3],
    /// How the camera is built.
    pub make: Make,
    /// Vertical field of view, degrees.
    pub fov: F32In,
    /// Image width and height (small, so that whole images are cast).
    pub size: (u8, u8),
    /// Max distance.
    pub max: F32In,
    /// Fields changed by hand after building (or from a default camera when building fails).
    pub edits_by_hand: Vec<HandEdit>,
    /// Origin policy (index into the three), unloaded policy stops, per-voxel walk.
    pub options: (u8, bool, bool),
    /// Which ids stop the rays.
    pub filter: FilterIn,
    /// First row of a band to cast, and how many rows.
    pub band: (u32, u8),
}

/// The target: decodes `data` and checks every pixel; panics on a wrong one.
pub fn run(data: &[u8]) {
    super::input::decode_and_check(data, check);
}

/// Whether the error `e` of building a camera from `input` is one its docs name for it.
fn refusal_named(input: &Input, e: CameraError, eye: (WorldPos, voxcast::glam::Vec3)) -> bool {
    let fov = input.fov.get();
    let forward = vec3(input.forward);
    match e {
        CameraError::Ray(r) => match &input.make {
            Make::LookAt(..) => true,
            _ => VoxelRay::new(eye.0, eye.1, forward, input.max.get()) == Err(r),
        },
        CameraError::FieldOfView => !(fov > 0.0 && fov < 180.0),
        CameraError::EmptyImage => input.size.0 == 0 || input.size.1 == 0,
        CameraError::VerticalView => true,
        CameraError::InvalidUp => match &input.make {
            Make::WithUp(up) => {
                let up = vec3(*up).as_dvec3();
                !(up.is_finite() && up.length() > 0.0)
            }
            _ => false,
        },
        CameraError::TargetIsEye => matches!(input.make, Make::LookAt(..)),
        CameraError::ImageTooLarge(_) => false,
    }
}

/// Checks the camera of `input` and its image.
///
/// # Errors
/// What was wrong.
pub fn check(input: &Input) -> Result<(), String> {
    let anchor = WorldPos::from_array(input.anchor.map(AnchorIn::get));
    let (world, _) = build(anchor, &input.edits[..input.edits.len().min(12)])?;
    let at =
        |c: [CoordIn; 3]| WorldPos::from_array(std::array::from_fn(|a| c[a].get(anchor.axis(a))));
    let eye = (at(input.position), vec3(input.sub));
    let (w, h) = (u32::from(input.size.0), u32::from(input.size.1));
    let (fov, max) = (input.fov.get(), input.max.get());
    let built = match &input.make {
        Make::New => Camera::new(eye.0, eye.1, vec3(input.forward), fov, w, h, max),
        Make::WithUp(up) => {
            Camera::with_up(eye.0, eye.1, vec3(input.forward), vec3(*up), fov, w, h, max)
        }
        Make::LookAt(target, target_sub) => {
            Camera::look_at(eye.0, eye.1, at(*target), vec3(*target_sub), fov, w, h, max)
        }
    };
    let mut camera = match built {
        Ok(c) => {
            well_formed(&c).map_err(|why| format!("built camera {c:?}: {why}"))?;
            c
        }
        Err(e) if refusal_named(input, e, eye) => Camera::new(
            WorldPos::ZERO,
            voxcast::glam::Vec3::splat(0.5),
            voxcast::glam::Vec3::X,
            60.0,
            4,
            3,
            16.0,
        )
        .map_err(|e| format!("the default camera: {e}"))?,
        Err(e) => return Err(format!("refused with {e:?}")),
    };
    for e in input.edits_by_hand.iter().take(4) {
        match e {
            HandEdit::Forward(v) => camera.forward = vec3(*v),
            HandEdit::Right(v) => camera.right = vec3(*v),
            HandEdit::Up(v) => camera.up = vec3(*v),
            HandEdit::Sub(v) => camera.sub_offset = vec3(*v),
            HandEdit::Size(w, h) => (camera.width, camera.height) = (*w, *h),
            HandEdit::Scale(x, y) => (camera.scale_x, camera.scale_y) = (x.get(), y.get()),
            HandEdit::Max(m) => camera.max_distance = m.get(),
        }
    }
    let opts = RaycastOptions {
        origin: ORIGIN_POLICIES[usize::from(input.options.0) % 3],
        blocks: input.filter.get(),
        unloaded: if input.options.1 {
            voxcast::UnloadedPolicy::Stop
        } else {
            voxcast::UnloadedPolicy::Air
        },
        per_voxel: input.options.2,
    };
    let pixel = |x: u32, y: u32| match camera.ray(x, y) {
        Ok(r) => voxel_raycast_with(&r, &world, &opts),
        Err(e) => RaycastOutcome::Invalid(e),
    };
    let compare = |got: &[RaycastOutcome], rows: std::ops::Range<u32>| -> Result<(), String> {
        let want_len = u64::from(camera.width) * u64::from(rows.end.saturating_sub(rows.start));
        if got.len() as u64 != want_len {
            return Err(format!(
                "{} outcomes for rows {rows:?}, {want_len} pixels",
                got.len()
            ));
        }
        for (i, o) in got.iter().enumerate() {
            let (x, y) = (
                (i % camera.width as usize) as u32,
                rows.start + (i / camera.width as usize) as u32,
            );
            let want = pixel(x, y);
            if !identical(o, &want) {
                return Err(format!("pixel ({x}, {y}): {o:?}, its ray gives {want:?}"));
            }
        }
        Ok(())
    };
    let what = |why: String| format!("{why}\n  camera {camera:?}");
    if camera.width == 0 || camera.height == 0 {
        // An empty image is the error Camera::new gives, for the image and for any band.
        let whole = raycast_camera(&camera, &world, &opts);
        let mut band = vec![RaycastOutcome::Miss; 3];
        let rows = input.band.0..input.band.0.saturating_add(u32::from(input.band.1));
        let part = raycast_camera_rows_into(&camera, rows, &world, &opts, &mut band);
        if whole != Err(CameraError::EmptyImage) || part != Err(CameraError::EmptyImage) {
            return Err(what(format!("an empty image gave {whole:?} and {part:?}")));
        }
        return Ok(());
    }
    let pixels = u64::from(camera.width) * u64::from(camera.height);
    if pixels <= PIXELS {
        let image = raycast_camera(&camera, &world, &opts)
            .map_err(|e| what(format!("raycast_camera: {e}")))?;
        compare(&image, 0..camera.height).map_err(what)?;
    } else if pixels.saturating_mul(size_of::<RaycastOutcome>() as u64) > isize::MAX as u64 {
        match raycast_camera(&camera, &world, &opts) {
            Err(CameraError::ImageTooLarge(n)) if n == pixels => {}
            other => {
                return Err(what(format!(
                    "{pixels} pixels gave {:?}",
                    other.map(|v| v.len())
                )));
            }
        }
    }
    // A band of rows, also past the image's bottom edge (the image plane goes on).
    let rows_fit = (PIXELS / u64::from(camera.width.max(1))).min(u64::from(input.band.1)) as u32;
    let rows = input.band.0..input.band.0.saturating_add(rows_fit);
    let mut band = vec![RaycastOutcome::Miss; 3];
    raycast_camera_rows_into(&camera, rows.clone(), &world, &opts, &mut band)
        .map_err(|e| what(format!("rows {rows:?}: {e}")))?;
    compare(&band, rows).map_err(what)?;
    Ok(())
}

/// A camera as its constructors promise it: unit, orthogonal axes, a positive finite scale,
/// a non-empty image, an eye that is a valid ray origin.
fn well_formed(c: &Camera) -> Result<(), String> {
    let unit = |v: voxcast::glam::Vec3| (v.length() - 1.0).abs() < 1e-4;
    if !(unit(c.forward) && unit(c.right) && unit(c.up)) {
        return Err("axes not of unit length".into());
    }
    if c.forward.dot(c.right).abs() > 1e-4
        || c.forward.dot(c.up).abs() > 1e-4
        || c.right.dot(c.up).abs() > 1e-4
    {
        return Err("axes not orthogonal".into());
    }
    // A field of view that small rounds its scale to 0: every pixel looks along `forward`.
    if !(c.scale_x.is_finite() && c.scale_y.is_finite() && c.scale_x >= 0.0 && c.scale_y >= 0.0) {
        return Err("scale not finite and non-negative".into());
    }
    if c.width == 0 || c.height == 0 {
        return Err("empty image".into());
    }
    if let Err(e) = c.ray(c.width / 2, c.height / 2) {
        return Err(format!("the center pixel's ray is invalid: {e}"));
    }
    Ok(())
}
