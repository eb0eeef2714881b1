//! What a real LiDAR makes of the rays it casts: each beam as a few sub-rays (divergence), one
//! return picked among them, an intensity from the hit voxel's reflectivity and the angle of
//! incidence, Gaussian range noise, dropout and a receiver threshold. Every random draw comes
//! from the seed, the step and the beam's place alone (a counter-based generator), so a scan is
//! reproducible, independent of threads and of the engine that cast its rays.

use glam::Vec3;
use rayon::iter::{IndexedParallelIterator, IntoParallelRefMutIterator, ParallelIterator};

use crate::ray::RaycastOutcome;
use crate::sensors::{SensorPose, SensorReadings, SensorRig};
use crate::world::VoxelId;

/// Which of a beam's sub-rays that hit makes its return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LidarReturn {
    /// The nearest hit.
    #[default]
    First,
    /// The farthest hit.
    Last,
    /// The hit of highest intensity; at equal intensity the nearer.
    Strongest,
}

/// Why [`LidarEffects`] cannot be applied.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum LidarError {
    /// `dropout` is not a probability in `[0, 1]`.
    #[error("dropout: a probability in [0, 1], not {0}")]
    Dropout(f32),
    /// `range_noise` is negative, NaN or infinite.
    #[error("range_noise: 0 or more voxels (finite), not {0}")]
    RangeNoise(f32),
    /// A reflectivity (of the id given; `None`: the default) lies outside `[0, 1]`.
    #[error("reflectivity of {id:?}: a value in [0, 1], not {value}")]
    Reflectivity {
        /// The id, or `None` for `default_reflectivity`.
        id: Option<u16>,
        /// The value given.
        value: f32,
    },
    /// `min_intensity` is NaN.
    #[error("min_intensity: a number, not NaN")]
    MinIntensity,
    /// A beam of no sub-rays, or readings that are not whole beams of the rig.
    #[error("sub_rays: at least 1, dividing the rig's {rays} rays, not {sub_rays}")]
    SubRays {
        /// Sub-rays a beam, as given.
        sub_rays: usize,
        /// Rays of the rig.
        rays: usize,
    },
    /// The readings were taken without outcomes (`sense(.., outcomes: false)`) or from another
    /// rig or poses.
    #[error("readings: the outcomes of this rig from these poses are needed")]
    Readings,
}

/// The effects of a real LiDAR, applied to the answers of a sensor sweep
/// ([`LidarEffects::beam`], [`LidarEffects::scan`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LidarEffects {
    /// Which sub-ray's hit makes a beam's return.
    pub returns: LidarReturn,
    /// Reflectivity in `[0, 1]` of each voxel id, indexed by id; ids past its end get
    /// `default_reflectivity`. A return's intensity is its voxel's reflectivity times the
    /// cosine of the angle between the ray and the face it hit.
    pub reflectivity: Vec<f32>,
    /// Reflectivity of the ids `reflectivity` does not reach, in `[0, 1]`.
    pub default_reflectivity: f32,
    /// Standard deviation, in voxels, of the Gaussian noise added to each return's range (the
    /// range never drops below 0).
    pub range_noise: f32,
    /// Probability in `[0, 1]` that a return is lost.
    pub dropout: f32,
    /// Returns of lower intensity are lost (a receiver's threshold).
    pub min_intensity: f32,
    /// The seed of every draw.
    pub seed: u64,
}

impl Default for LidarEffects {
    /// No effect: the first hit, at its exact range, reflectivity 0.5 everywhere.
    fn default() -> Self {
        Self {
            returns: LidarReturn::First,
            reflectivity: Vec::new(),
            default_reflectivity: 0.5,
            range_noise: 0.0,
            dropout: 0.0,
            min_intensity: 0.0,
            seed: 0,
        }
    }
}

/// One beam's return.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LidarBeam {
    /// Range along the sub-ray that made the return, in voxels, noise added;
    /// `f32::INFINITY` where no return came back.
    pub range: f32,
    /// Intensity in `[0, 1]`; 0 without a return.
    pub intensity: f32,
    /// The hit voxel's id; [`VoxelId::AIR`] without a return.
    pub id: VoxelId,
    /// Which of the beam's sub-rays made the return (0 without one).
    pub sub_ray: usize,
}

impl LidarBeam {
    /// A beam from which no return came back.
    pub const NONE: Self = Self {
        range: f32::INFINITY,
        intensity: 0.0,
        id: VoxelId::AIR,
        sub_ray: 0,
    };

    /// Whether a return came back.
    #[must_use]
    pub fn returned(&self) -> bool {
        self.range.is_finite()
    }
}

/// SplitMix64's finalizer: a bijection of `u64` whose outputs pass as independent uniform draws.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform draw in `[0, 1)` from `z` (53 bits).
fn unit(z: u64) -> f64 {
    (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

impl LidarEffects {
    /// Checks every field.
    ///
    /// # Errors
    /// The first field out of range, as [`LidarError`] names it.
    pub fn check(&self) -> Result<(), LidarError> {
        if !(0.0..=1.0).contains(&self.dropout) {
            return Err(LidarError::Dropout(self.dropout));
        }
        if !(self.range_noise >= 0.0 && self.range_noise.is_finite()) {
            return Err(LidarError::RangeNoise(self.range_noise));
        }
        if self.min_intensity.is_nan() {
            return Err(LidarError::MinIntensity);
        }
        let bad = |v: f32| !(0.0..=1.0).contains(&v);
        if bad(self.default_reflectivity) {
            return Err(LidarError::Reflectivity {
                id: None,
                value: self.default_reflectivity,
            });
        }
        if let Some((id, &value)) = self.reflectivity.iter().enumerate().find(|(_, v)| bad(**v)) {
            return Err(LidarError::Reflectivity {
                id: Some(id as u16),
                value,
            });
        }
        Ok(())
    }

    /// The intensity of a hit on voxel `id` by a ray along unit `direction` through the face
    /// of normal `normal` (zero where the ray started inside the voxel: intensity 0).
    #[must_use]
    pub fn intensity(&self, id: VoxelId, direction: Vec3, normal: glam::IVec3) -> f32 {
        let r = self
            .reflectivity
            .get(usize::from(id.0))
            .copied()
            .unwrap_or(self.default_reflectivity);
        r * direction.dot(normal.as_vec3()).abs()
    }

    /// The return of one beam, from the outcomes of its sub-rays and their unit directions
    /// (in order, the beam's axis first), drawn for `(step, agent, beam)`: the picked hit, its
    /// range with noise, lost to dropout or the threshold. Rays that did not hit (misses,
    /// unloaded space, invalid rays) make no return. Assumes [`LidarEffects::check`] passed.
    #[must_use]
    pub fn beam(
        &self,
        step: u64,
        agent: u64,
        beam: u64,
        sub_rays: impl IntoIterator<Item = (RaycastOutcome, Vec3)>,
    ) -> LidarBeam {
        // (distance, intensity, id, sub-ray) of the picked hit.
        let mut best: Option<(f32, f32, VoxelId, usize)> = None;
        for (k, (o, d)) in sub_rays.into_iter().enumerate() {
            let RaycastOutcome::Hit(h) = o else { continue };
            let i = self.intensity(h.voxel_type, d, h.face_normal);
            let better = best.is_none_or(|(bt, bi, _, _)| match self.returns {
                LidarReturn::First => h.distance < bt,
                LidarReturn::Last => h.distance > bt,
                LidarReturn::Strongest => i > bi || (i == bi && h.distance < bt),
            });
            if better {
                best = Some((h.distance, i, h.voxel_type, k));
            }
        }
        // Three draws for every beam, hit or not, so that one beam's draws never depend on
        // another's answers.
        // The beam is mixed in too: with it only xored in, neighbouring beams' draws would
        // share values (`key ^ 1` of one beam is `key ^ 2` of another).
        let key = mix(mix(mix(mix(self.seed ^ 0x6c69_6461_7200_0000) ^ step) ^ agent) ^ beam);
        let draw = |k: u64| unit(mix(key.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15))));
        let (u1, u2, u3) = (draw(1), draw(2), draw(3));
        let Some((t, intensity, id, sub_ray)) = best else {
            return LidarBeam::NONE;
        };
        if u3 < f64::from(self.dropout) || intensity < self.min_intensity {
            return LidarBeam::NONE;
        }
        // Box-Muller: a standard normal from two uniforms (`1 - u1` lies in (0, 1]).
        let normal = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let range = (f64::from(t) + normal * f64::from(self.range_noise)).max(0.0);
        LidarBeam {
            range: range as f32,
            intensity,
            id,
            sub_ray,
        }
    }

    /// Every beam of every agent of a sweep: `readings` of [`sense`](crate::sense) with
    /// outcomes, of `rig` from `poses`, whose rays are beams of `sub_rays` consecutive rays
    /// each. Beams agent after agent, on all threads, drawn for `step`.
    ///
    /// # Errors
    /// [`LidarError`] for bad effects, a `sub_rays` that does not divide the rig, or readings
    /// of another rig or without outcomes; nothing is computed then.
    pub fn scan(
        &self,
        rig: &SensorRig,
        poses: &[SensorPose],
        readings: &SensorReadings,
        sub_rays: usize,
        step: u64,
    ) -> Result<Vec<LidarBeam>, LidarError> {
        self.check()?;
        let rays = rig.len();
        if sub_rays == 0 || !rays.is_multiple_of(sub_rays) {
            return Err(LidarError::SubRays { sub_rays, rays });
        }
        let outcomes = readings.outcomes().ok_or(LidarError::Readings)?;
        if readings.rays_per_agent() != rays || outcomes.len() != rays * poses.len() {
            return Err(LidarError::Readings);
        }
        let beams = rays / sub_rays;
        let mut out = vec![LidarBeam::NONE; beams * poses.len()];
        out.par_iter_mut()
            .enumerate()
            .with_min_len(256)
            .for_each(|(i, slot)| {
                let (a, b) = (i / beams, i % beams);
                let subs = (b * sub_rays..(b + 1) * sub_rays).map(|k| {
                    let o = outcomes[a * rays + k];
                    // Only a hit's direction is read (its intensity).
                    let d = match o {
                        RaycastOutcome::Hit(_) => {
                            poses[a].ray(rig, k).map_or(Vec3::ZERO, |r| r.direction)
                        }
                        _ => Vec3::ZERO,
                    };
                    (o, d)
                });
                *slot = self.beam(step, a as u64, b as u64, subs);
            });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorldPos;
    use crate::ray::VoxelRaycastHit;
    use glam::{IVec3, Vec2};

    fn hit(t: f32, id: u16, normal: IVec3) -> RaycastOutcome {
        RaycastOutcome::Hit(VoxelRaycastHit {
            voxel_pos: WorldPos::ZERO,
            face_normal: normal,
            distance: t,
            voxel_type: VoxelId(id),
            hit_uv: Vec2::ZERO,
        })
    }

    #[test]
    fn returns_pick_first_last_and_strongest() {
        let fx = |returns| LidarEffects {
            returns,
            reflectivity: vec![0.0, 0.2, 0.9],
            ..LidarEffects::default()
        };
        let d = Vec3::new(0.0, -0.6, 0.8);
        let subs = [
            (hit(5.0, 1, IVec3::Y), d),
            (RaycastOutcome::Miss, d),
            (hit(9.0, 2, IVec3::Y), d),
            (hit(7.0, 2, IVec3::NEG_Z), d),
        ];
        let first = fx(LidarReturn::First).beam(0, 0, 0, subs);
        assert_eq!((first.range, first.id, first.sub_ray), (5.0, VoxelId(1), 0));
        assert!((first.intensity - 0.2 * 0.6).abs() < 1e-6);
        let last = fx(LidarReturn::Last).beam(0, 0, 0, subs);
        assert_eq!((last.range, last.sub_ray), (9.0, 2));
        // 0.9 * 0.8 (the -Z face) beats 0.9 * 0.6 and 0.2 * 0.6.
        let strong = fx(LidarReturn::Strongest).beam(0, 0, 0, subs);
        assert_eq!((strong.range, strong.sub_ray), (7.0, 3));
        let none = fx(LidarReturn::First).beam(0, 0, 0, [(RaycastOutcome::Miss, d)]);
        assert_eq!(none, LidarBeam::NONE);
        assert!(!none.returned() && first.returned());
    }

    #[test]
    fn draws_are_reproducible_and_near_their_rates() {
        let fx = LidarEffects {
            range_noise: 0.1,
            dropout: 0.2,
            seed: 9,
            ..LidarEffects::default()
        };
        let d = Vec3::Y;
        let beams: Vec<LidarBeam> = (0..20_000)
            .map(|b| fx.beam(3, 1, b, [(hit(10.0, 1, IVec3::NEG_Y), -d)]))
            .collect();
        let again = fx.beam(3, 1, 17, [(hit(10.0, 1, IVec3::NEG_Y), -d)]);
        assert_eq!(again, beams[17]);
        // Another step draws anew: the ranges of nearly every beam differ.
        let differ = (0..100)
            .filter(|&b| {
                let other = fx.beam(4, 1, b, [(hit(10.0, 1, IVec3::NEG_Y), -d)]);
                other.range.to_bits() != beams[b as usize].range.to_bits()
            })
            .count();
        assert!(differ > 60, "{differ} of 100 beams differ between steps");
        let kept: Vec<f64> = beams
            .iter()
            .filter(|b| b.returned())
            .map(|b| f64::from(b.range) - 10.0)
            .collect();
        let lost = 1.0 - kept.len() as f64 / beams.len() as f64;
        assert!((0.18..0.22).contains(&lost), "dropout {lost}");
        let mean = kept.iter().sum::<f64>() / kept.len() as f64;
        let sd = (kept.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / kept.len() as f64).sqrt();
        assert!(
            mean.abs() < 0.005 && (0.095..0.105).contains(&sd),
            "{mean} {sd}"
        );
    }

    #[test]
    fn bad_effects_and_readings_are_errors() {
        let bad = [
            LidarEffects {
                dropout: 1.5,
                ..LidarEffects::default()
            },
            LidarEffects {
                range_noise: f32::NAN,
                ..LidarEffects::default()
            },
            LidarEffects {
                reflectivity: vec![0.5, 2.0],
                ..LidarEffects::default()
            },
        ];
        for fx in &bad {
            assert!(fx.check().is_err(), "{fx:?}");
        }
        let rig = SensorRig::new(&[(Vec3::X, 10.0), (Vec3::Y, 10.0), (Vec3::Z, 10.0)]).unwrap();
        let poses = [SensorPose::new(
            WorldPos::ZERO,
            Vec3::splat(0.5),
            glam::Quat::IDENTITY,
        )];
        let world = crate::VoxelWorld::new();
        let opts = crate::RaycastOptions::default();
        let with = crate::sense(&rig, &poses, &world, &opts, true);
        let without = crate::sense(&rig, &poses, &world, &opts, false);
        let fx = LidarEffects::default();
        assert_eq!(
            fx.scan(&rig, &poses, &with, 2, 0),
            Err(LidarError::SubRays {
                sub_rays: 2,
                rays: 3
            })
        );
        assert_eq!(
            fx.scan(&rig, &poses, &without, 1, 0),
            Err(LidarError::Readings)
        );
        let beams = fx.scan(&rig, &poses, &with, 3, 0).unwrap();
        assert_eq!(beams, vec![LidarBeam::NONE]);
    }
}
