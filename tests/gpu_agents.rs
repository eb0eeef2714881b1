//! Agent visibility on the GPU (`AgentPairs`, `PairsWithin`)
//! against the CPU reference (`agent_visibility`), pair by pair: every option, conservative line
//! of sight too, bits alone or with each pair's answer; bad agents and bad indices answered with
//! their errors while the rest are answered; agents outside the window; the pairs within a
//! radius.

#![cfg(feature = "gpu")]

use voxcast::glam::Vec3;
use voxcast::gpu::GpuRaycaster;
use voxcast::gpu::{AgentPairs, PairsWithin};
use voxcast::{
    Agent, Chunk, ChunkPos, LineOfSight, LineOfSightOptions, RayError, UnloadedPolicy, VoxelId,
    VoxelWorld, WorldPos, agent_visibility, pairs_within,
};
use voxcast_testkit::gpu::*;
use voxcast_testkit::scene::SplitMix64;

/// Pairs among `n` agents: every pair of the first 40, then random ones (some with an index
/// past the end when `past_end`).
fn pairs(n: u32, count: usize, seed: u64, past_end: bool) -> Vec<[u32; 2]> {
    let mut rng = SplitMix64::new(seed);
    let mut out: Vec<[u32; 2]> = (0..40.min(n))
        .flat_map(|a| (0..40.min(n)).map(move |b| [a, b]))
        .collect();
    let range = if past_end {
        u64::from(n) + 3
    } else {
        u64::from(n)
    };
    out.extend((0..count).map(|_| [rng.below(range) as u32, rng.below(range) as u32]));
    out
}

/// Every option of line of sight (origin policy, unloaded policy, material filter, per-voxel
/// mode, plain and conservative), with each pair's answer and with bits alone.
#[test]
fn agent_visibility_equals_the_cpu_under_every_option() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let agents = t.agents(300, 5);
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    assert_eq!(on_gpu.errors().count(), 0);
    let mut pairs = pairs(300, 1_500, 6, false);
    pairs.extend(pairs_within(&agents, 40.0));
    for raycast in every_option() {
        for conservative in [false, true] {
            let opts = LineOfSightOptions {
                conservative,
                raycast: raycast.clone(),
            };
            let cpu = agent_visibility(&agents, &pairs, tw, &opts);
            let what = format!("{opts:?}");
            let full = gpu
                .cast(
                    AgentPairs {
                        agents: &on_gpu,
                        pairs: &pairs,
                        outcomes: true,
                    },
                    &gw,
                    &opts,
                )
                .expect("visibility");
            check_visibility(&what, &full, &cpu, &pairs);
            // Every ordered pair of the first 40 agents is listed first (`pairs`), each agent
            // with itself too (a segment of length 0): a pair and its reverse answer alike.
            let answers = full.answers().expect("answers");
            for a in 0..40 {
                for b in 0..40 {
                    let (ab, ba) = (answers[a * 40 + b], answers[b * 40 + a]);
                    assert!(
                        ab.matches(&ba),
                        "{what}: [{a}, {b}] {ab:?}, reversed {ba:?}"
                    );
                }
                assert_ne!(
                    answers[a * 41],
                    LineOfSight::Invalid(RayError::ZeroDirection)
                );
            }
            let bits = gpu
                .cast(
                    AgentPairs {
                        agents: &on_gpu,
                        pairs: &pairs,
                        outcomes: false,
                    },
                    &gw,
                    &opts,
                )
                .expect("visibility");
            assert!(bits.answers().is_none());
            check_visibility(&format!("{what} (bits)"), &bits, &cpu, &pairs);
        }
    }
}

/// An agent with a NaN offset, an infinite eye height or an eye pushed out of the i128 world
/// has its error; its pairs, pairs naming an index past the end, and pairs whose eyes lie
/// farther apart than the cap are answered with theirs (not visible), and every other pair is
/// answered as the CPU answers it (two agents at one eye see each other).
#[test]
fn bad_agents_get_their_error_and_the_rest_are_answered() {
    let Some(gpu) = gpu() else { return };
    // Two stone chunks 3000 chunks apart: one window wider than MAX_DISTANCE_CAP.
    let mut world = VoxelWorld::new();
    for x in [0, 3000] {
        world
            .insert_chunk(ChunkPos::new(x, 0, 0), Chunk::filled(VoxelId(1)))
            .expect("in the world");
    }
    world.set_voxel(WorldPos::new(40, 40, 10), VoxelId(2));
    let gw = gpu.upload_world(&world).expect("upload");
    let at = |x: i128, y: i128| Agent::new(WorldPos::new(x, y, 10), Vec3::new(0.5, 0.0, 0.5), 1.5);
    let mut agents = vec![
        at(10, 40),
        at(60, 40),
        at(60, 40),            // the same eye as agent 1
        at(3000 * 32 + 5, 40), // beyond the cap from agent 0
        Agent::new(
            WorldPos::new(20, 40, 10),
            Vec3::new(f32::NAN, 0.0, 0.0),
            1.5,
        ),
        Agent::new(WorldPos::new(20, 40, 10), Vec3::ZERO, f32::INFINITY),
        Agent::new(WorldPos::new(20, i128::MAX, 10), Vec3::ZERO, 3.0),
        at(25, 50),
    ];
    agents.push(at(30, 30));
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let errors: Vec<_> = on_gpu.errors().collect();
    assert_eq!(
        errors,
        vec![
            (4, RayError::NonFiniteSubOffset),
            (5, RayError::NonFiniteSubOffset),
            (6, RayError::OriginOutOfRange)
        ]
    );
    let pairs = pairs(agents.len() as u32, 200, 7, true);
    let opts = LineOfSightOptions::default();
    let cpu = agent_visibility(&agents, &pairs, &world, &opts);
    let gpu_answers = gpu
        .cast(
            AgentPairs {
                agents: &on_gpu,
                pairs: &pairs,
                outcomes: true,
            },
            &gw,
            &opts,
        )
        .expect("visibility");
    check_visibility("bad agents", &gpu_answers, &cpu, &pairs);
    let answer = |p: [u32; 2]| {
        gpu_answers.answers().expect("answers")[pairs.iter().position(|&q| q == p).expect("listed")]
    };
    assert_eq!(answer([1, 2]), LineOfSight::Clear);
    assert_eq!(
        answer([0, 3]),
        LineOfSight::Invalid(RayError::MaxDistanceTooLarge)
    );
    assert_eq!(
        answer([0, 4]),
        LineOfSight::Invalid(RayError::NonFiniteSubOffset)
    );
    assert!(cpu.contains(&LineOfSight::Invalid(RayError::NoSuchAgent)));
    assert!(cpu.contains(&LineOfSight::Clear));
}

/// Agents in unloaded space beyond the window are cast from segments built on the host; both
/// unloaded policies give the CPU's answers.
#[test]
fn agents_outside_the_window_are_answered_from_host_segments() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let mut agents = t.agents(60, 8);
    for i in 0..20 {
        agents.push(Agent::new(
            WorldPos::new(-70 - i, 120, 40 + 3 * i),
            Vec3::new(0.25, 0.5, 0.75),
            1.6,
        ));
    }
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let pairs = pairs(80, 2_000, 9, false);
    for unloaded in [UnloadedPolicy::Air, UnloadedPolicy::Stop] {
        let opts = LineOfSightOptions {
            conservative: true,
            raycast: voxcast::RaycastOptions {
                unloaded,
                ..Default::default()
            },
        };
        let cpu = agent_visibility(&agents, &pairs, tw, &opts);
        let got = gpu
            .cast(
                AgentPairs {
                    agents: &on_gpu,
                    pairs: &pairs,
                    outcomes: true,
                },
                &gw,
                &opts,
            )
            .expect("visibility");
        check_visibility(&format!("outside, {unloaded:?}"), &got, &cpu, &pairs);
    }
}

/// The visible pairs within a radius: the pairs `pairs_within` finds, those the CPU sees.
#[test]
fn visible_pairs_within_a_radius_equal_the_cpus() {
    let Some(gpu) = gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let agents = t.agents(500, 10);
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let opts = LineOfSightOptions::default();
    // No limit (the cap) finds every pair of the terrain's agents, as the cap itself does.
    assert_eq!(
        pairs_within(&agents, f64::INFINITY),
        pairs_within(&agents, f64::from(voxcast::MAX_DISTANCE_CAP))
    );
    assert_eq!(pairs_within(&agents, f64::MAX).len(), 500 * 499 / 2);
    for radius in [0.0, 16.0, 64.0, f64::INFINITY] {
        let near = pairs_within(&agents, radius);
        let cpu = agent_visibility(&agents, &near, tw, &opts);
        let want: Vec<[u32; 2]> = near
            .iter()
            .zip(&cpu)
            .filter(|(_, c)| **c == LineOfSight::Clear)
            .map(|(p, _)| *p)
            .collect();
        let got = gpu
            .cast(
                PairsWithin {
                    agents: &on_gpu,
                    radius,
                },
                &gw,
                &opts,
            )
            .expect("visible pairs");
        assert_eq!(got, want, "radius {radius}");
        if radius == 64.0 {
            assert!(want.len() > 100, "{} visible pairs", want.len());
        }
    }
    // Agents moved: the same GpuAgents, updated.
    let moved = t.agents(200, 11);
    let mut on_gpu = on_gpu;
    on_gpu.update(&moved, &gw).expect("update");
    let near = pairs_within(&moved, 64.0);
    let cpu = agent_visibility(&moved, &near, tw, &opts);
    let got = gpu
        .cast(
            AgentPairs {
                agents: &on_gpu,
                pairs: &near,
                outcomes: false,
            },
            &gw,
            &opts,
        )
        .expect("visibility");
    check_visibility("moved agents", &got, &cpu, &near);
}

/// Checked against pairs on a raycaster of the test's own: every pair in the window goes to the
/// shader (`cast_pairs`), none to the host.
#[test]
fn pairs_in_the_window_are_cast_in_the_shader() {
    let Some(gpu) = own_gpu() else { return };
    let (t, tw) = terrain();
    let gw = gpu.upload_world(tw).expect("upload");
    let agents = t.agents(100, 12);
    let on_gpu = gpu.upload_agents(&agents, &gw).expect("agents");
    let pairs = pairs(100, 500, 13, false);
    let opts = LineOfSightOptions::default();
    let batch = gpu
        .submit(
            AgentPairs {
                agents: &on_gpu,
                pairs: &pairs,
                outcomes: false,
            },
            &gw,
            &opts,
        )
        .expect("submit");
    let (got, stats) = batch.wait_with_stats().expect("visibility");
    check_visibility(
        "in the shader",
        &got,
        &agent_visibility(&agents, &pairs, tw, &opts),
        &pairs,
    );
    assert_eq!(stats.gpu_rays, pairs.len() as u64);
    let _: &GpuRaycaster = &gpu;
}
