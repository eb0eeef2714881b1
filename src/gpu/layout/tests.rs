//! The wire format's twin tests: the shader read through naga (its stage files, constants,
//! struct sizes and bindings) against the Rust side.

use super::*;
use crate::gpu::{ENTRIES, SHADER_SOURCE, SHADER_STAGES};
use crate::world::OCCUPANCY_WORDS;

fn module() -> naga::Module {
    match naga::front::wgsl::parse_str(SHADER_SOURCE) {
        Ok(m) => m,
        Err(e) => panic!(
            "the shader does not parse ({}):\n{}",
            e.location(SHADER_SOURCE)
                .map_or_else(String::new, |l| shader_place(l.line_number)),
            e.emit_to_string(SHADER_SOURCE)
        ),
    }
}

/// The module validated, and naga's analysis of it.
fn validated() -> (naga::Module, naga::valid::ModuleInfo) {
    let m = module();
    let mut v = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    );
    match v.validate(&m) {
        Ok(info) => (m, info),
        Err(e) => panic!(
            "the shader does not validate ({}):\n{}",
            e.location(SHADER_SOURCE)
                .map_or_else(String::new, |l| shader_place(l.line_number)),
            e.emit_to_string(SHADER_SOURCE)
        ),
    }
}

/// `SHADER_STAGES` lists the files that `SHADER_SOURCE` joins, in its order, and
/// `shader_place` finds a line's file and line there.
#[test]
fn the_stages_join_into_the_shader() {
    let mut joined = String::new();
    for stage in SHADER_STAGES {
        let (path, text) = stage_file(stage);
        assert!(text.ends_with('\n'), "{path} ends without a line break");
        joined.push_str(&text);
    }
    assert!(
        joined == SHADER_SOURCE,
        "SHADER_STAGES does not list the files of SHADER_SOURCE in its order"
    );
    let first_of_boxes = SHADER_SOURCE
        .lines()
        .position(|l| l.starts_with("fn box_voxel("))
        .expect("box_voxel in the shader") as u32
        + 1;
    let in_boxes = stage_file("boxes")
        .1
        .lines()
        .position(|l| l.starts_with("fn box_voxel("))
        .expect("box_voxel in boxes.wgsl") as u32
        + 1;
    assert_eq!(
        shader_place(first_of_boxes),
        format!("shaders/boxes.wgsl:{in_boxes}")
    );
}

/// A scalar constant's value, as both sides write it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Value {
    U(u32),
    I(i32),
    F(f32),
}

#[test]
fn shader_constants_equal_their_rust_twins() {
    use Value::{F, I, U};
    let twins: &[(&str, Value)] = &[
        ("AXIS_NONE", U(crate::cpu_ref::AXIS_NONE)),
        ("T_DISABLED", F(crate::cpu_ref::T_DISABLED)),
        ("NEAR_TIE", F(crate::cpu_ref::NEAR_TIE)),
        ("MIN_NORMAL", F(f32::MIN_POSITIVE)),
        ("TAG_MASK", U(TAG_MASK)),
        ("TAG_EMPTY", U(TAG_EMPTY)),
        ("TAG_UNLOADED", U(TAG_UNLOADED)),
        ("TAG_UNIFORM", U(TAG_UNIFORM)),
        ("OCC_WORDS", U(OCCUPANCY_WORDS as u32)),
        ("SLOT_WORDS", U(SLOT_WORDS as u32)),
        ("RECORD_BRICKS", U(RECORD_BRICKS as u32)),
        ("BRICK_UNIFORM", U(BRICK_UNIFORM)),
        ("BRICK_EDGE", I(crate::world::BRICK_EDGE as i32)),
        ("ORIGIN_REPORT", U(ORIGIN_REPORT)),
        ("ORIGIN_SKIP", U(ORIGIN_SKIP)),
        ("ORIGIN_EXIT_SOLID", U(ORIGIN_EXIT_SOLID)),
        ("FLAG_STOP_UNLOADED", U(FLAG_STOP_UNLOADED)),
        ("FLAG_EVERY_NON_AIR", U(FLAG_EVERY_NON_AIR)),
        ("FLAG_CONSERVATIVE", U(FLAG_CONSERVATIVE)),
        ("FLAG_PER_VOXEL", U(FLAG_PER_VOXEL)),
        ("FLAG_STEP_EMPTY_BRICKS", U(FLAG_STEP_EMPTY_BRICKS)),
        ("FLAG_TOROIDAL", U(FLAG_TOROIDAL)),
        ("FLAG_PARTIAL", U(FLAG_PARTIAL)),
        ("FLAG_LOOP_BUDGET", U(FLAG_LOOP_BUDGET)),
        ("FLAG_RAYS_AS_GIVEN", U(FLAG_RAYS_AS_GIVEN)),
        ("FLAG_SHAPES", U(FLAG_SHAPES)),
        ("RAY_NEGATIVE_SHIFT", U(RAY_NEGATIVE_SHIFT)),
        ("RAY_ENTRY_SHIFT", U(RAY_ENTRY_SHIFT)),
        ("RAY_CLIPPED", U(RAY_CLIPPED)),
        ("RAY_PLANE_SHIFT", U(RAY_PLANE_SHIFT)),
        ("RAY_FLAG_BITS", U((1 << RAY_COUNTS_SHIFT) - 1)),
        ("RAY_SET_UP_IN_SHADER", U(RAY_SET_UP_IN_SHADER)),
        ("COUNT_BITS", U(COUNT_MAX)),
        ("STATUS_MISS", U(STATUS_MISS)),
        ("STATUS_HIT", U(STATUS_HIT)),
        ("STATUS_UNLOADED", U(STATUS_UNLOADED)),
        ("STATUS_RUNAWAY", U(STATUS_RUNAWAY)),
        ("STATUS_TOO_LONG", U(STATUS_TOO_LONG)),
        ("MAX_DISTANCE_CAP", F(crate::ray::MAX_DISTANCE_CAP)),
        ("MIN_SQUARED_LENGTH", F(crate::ray::MIN_SQUARED_LENGTH)),
        ("ROTATION_STEP", F(crate::sensors::ROTATION_STEP)),
    ];
    // Then each query kind's own, listed in its entry point.
    let twins: Vec<(&str, Value)> = twins
        .iter()
        .copied()
        .chain(
            ENTRIES
                .iter()
                .flat_map(|e| e.constants.iter().map(|&(n, v)| (n, U(v)))),
        )
        .collect();
    // Constants the host never writes or reads: internal to the shader.
    let shader_only = [
        "BLOCK_BITS",
        "LAYER_BITS",
        "HALF_BITS",
        "FLAG_ORIGIN_MASK",
        "RAY_ENABLED_SHIFT",
        "STATUS_BITS",
        "STATUS_SHAPED",
        "MAX_ITERATIONS",
        "WALK_HIT",
        "WALK_EMPTY_BRICK",
        "WALK_LEFT_CHUNK",
        "WALK_MISS",
        "ID_LATER",
    ];
    let shader_only: Vec<&str> = shader_only
        .into_iter()
        .chain(ENTRIES.iter().flat_map(|e| e.shader_only.iter().copied()))
        .collect();
    let m = module();
    let mut seen = Vec::new();
    for (_, c) in m.constants.iter() {
        let name = c.name.clone().unwrap_or_default();
        let value = match m.global_expressions[c.init] {
            naga::Expression::Literal(naga::Literal::U32(v)) => U(v),
            naga::Expression::Literal(naga::Literal::I32(v)) => I(v),
            naga::Expression::Literal(naga::Literal::F32(v)) => F(v),
            ref other => panic!("shader constant {name} is not a scalar literal: {other:?}"),
        };
        match twins.iter().find(|(n, _)| *n == name) {
            Some(&(_, rust)) => assert_eq!(value, rust, "{name}: shader against Rust"),
            None => assert!(
                shader_only.contains(&name.as_str()),
                "shader constant {name} is neither a twin of a Rust constant nor listed as \
                 shader-only"
            ),
        }
        seen.push(name);
    }
    for (name, _) in &twins {
        assert!(
            seen.iter().any(|s| s == name),
            "{name} is not in the shader"
        );
    }
    // The workgroup size of every entry point.
    for e in ENTRIES {
        let point = m
            .entry_points
            .iter()
            .find(|p| p.name == e.name)
            .unwrap_or_else(|| panic!("no entry point {}", e.name));
        assert_eq!(point.workgroup_size, [WORKGROUP_SIZE, 1, 1], "{}", e.name);
    }
}

#[test]
fn shader_parses_and_validates() {
    validated();
}

/// Every resource the shader declares is a binding of an entry point ([`ENTRIES`]) with its
/// number, name and access, no two bindings share a number unless they are the same, every
/// entry point is in the shader, and each uses exactly the bindings of its bind group
/// ([`Entry::bindings`]) and writes only its output.
#[test]
fn bindings_match_the_shader() {
    use naga::valid::GlobalUse;
    use std::collections::{BTreeMap, BTreeSet};

    let mut rows: BTreeMap<u32, ShaderBinding> = BTreeMap::new();
    for e in ENTRIES {
        for b in e.bindings() {
            let row = *rows.entry(b.number).or_insert(b);
            assert_eq!(
                row, b,
                "{}: binding {} against another entry's",
                e.name, b.number
            );
        }
    }
    let (m, info) = validated();
    let mut declared = BTreeSet::new();
    for (_, var) in m.global_variables.iter() {
        let name = var.name.as_deref().unwrap_or("(unnamed)");
        let Some(rb) = &var.binding else {
            continue;
        };
        assert_eq!(rb.group, 0, "{name}: group");
        let row = rows
            .get(&rb.binding)
            .unwrap_or_else(|| panic!("{name}: binding {} is no entry point's", rb.binding));
        assert_eq!(
            row.name, name,
            "binding {}: the Rust side against the shader",
            rb.binding
        );
        let access = match var.space {
            naga::AddressSpace::Uniform => Access::Uniform,
            naga::AddressSpace::Storage { access } if access == naga::StorageAccess::LOAD => {
                Access::Read
            }
            naga::AddressSpace::Storage { access }
                if access == naga::StorageAccess::LOAD | naga::StorageAccess::STORE =>
            {
                Access::ReadWrite
            }
            ref other => panic!("{name}: address space {other:?}"),
        };
        assert_eq!(
            row.access, access,
            "{name}: the Rust side against the shader"
        );
        declared.insert(rb.binding);
    }
    let numbers: BTreeSet<u32> = rows.keys().copied().collect();
    assert_eq!(
        declared, numbers,
        "the shader's bindings against the entry points'"
    );

    for e in ENTRIES {
        assert!(
            e.input.access == Access::Read
                && e.extra.is_none_or(|b| b.access == Access::Read)
                && e.output.access == Access::ReadWrite,
            "{}: {e:?}",
            e.name
        );
        let numbers: Vec<u32> = e.bindings().map(|b| b.number).collect();
        assert!(numbers.is_sorted(), "{}: {numbers:?}", e.name);
        let index = m
            .entry_points
            .iter()
            .position(|p| p.name == e.name)
            .unwrap_or_else(|| panic!("no entry point {}", e.name));
        let uses = info.get_entry_point(index);
        let used_with = |wanted: GlobalUse| -> BTreeSet<u32> {
            m.global_variables
                .iter()
                .filter(|&(h, _)| uses[h].intersects(wanted))
                .filter_map(|(_, var)| var.binding.as_ref().map(|rb| rb.binding))
                .collect()
        };
        let mut bound: BTreeSet<u32> = numbers.into_iter().collect();
        if !e.reads_input {
            bound.remove(&e.input.number);
        }
        if !e.reads_shapes {
            bound.remove(&SHAPES.number);
        }
        assert_eq!(
            used_with(GlobalUse::all()),
            bound,
            "{}: bindings used",
            e.name
        );
        assert_eq!(
            used_with(GlobalUse::WRITE | GlobalUse::ATOMIC),
            BTreeSet::from([e.output.number]),
            "{}: bindings written",
            e.name
        );
    }
    // Every entry point of the shader is registered.
    for p in &m.entry_points {
        assert!(
            ENTRIES.iter().any(|e| e.name == p.name),
            "entry point {} is not in ENTRIES",
            p.name
        );
    }
}

#[test]
fn shared_struct_sizes_match_wgsl() {
    let m = module();
    let size_of_wgsl = |name: &str| -> usize {
        let (_, ty) = m
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no struct {name}"));
        ty.inner.size(m.to_ctx()) as usize
    };
    assert_eq!(size_of_wgsl("GpuRay"), size_of::<GpuRay>(), "GpuRay");
    assert_eq!(size_of_wgsl("GpuHit"), size_of::<GpuHit>(), "GpuHit");
    assert_eq!(size_of_wgsl("Params"), size_of::<GpuParams>(), "Params");
    // Each query kind's own, listed in its entry point.
    for e in ENTRIES {
        for w in e.structs {
            assert_eq!(size_of_wgsl(w.name), w.size, "{} of {}", w.name, e.name);
        }
    }
}
