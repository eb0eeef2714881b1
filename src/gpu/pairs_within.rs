//! [`PairsWithin`]: the pairs of agents near each other that see each other, on the GPU, the
//! twin of [`visible_pairs_within`](crate::visible_pairs_within): the pairs found on the host
//! ([`pairs_within`](crate::pairs_within)), their line of sight cast as agent pairs
//! (`agents.rs`).

use crate::gpu::agents::{AgentPairs, GpuAgents, PairJob, Visibility, pair_job};
use crate::gpu::error::GpuError;
use crate::gpu::pending::{Launch, PendingBatch, Then};
use crate::gpu::query::{Query, sealed::Sealed};
use crate::ray::LineOfSightOptions;

/// Every pair of agents whose eyes are at most `radius` voxels apart
/// ([`pairs_within`](crate::pairs_within)) that see each other, as the list of pairs `[a, b]`
/// (`a < b`, sorted): what [`visible_pairs_within`](crate::visible_pairs_within) gives on the
/// CPU. Submitting it fails as [`AgentPairs`] does.
#[derive(Clone, Copy, Debug)]
pub struct PairsWithin<'a> {
    /// The agents' eyes ([`GpuRaycaster::upload_agents`](crate::gpu::GpuRaycaster::upload_agents)).
    pub agents: &'a GpuAgents,
    /// The largest distance between two eyes, in voxels.
    pub radius: f64,
}

impl Sealed for PairsWithin<'_> {}

impl Query for PairsWithin<'_> {
    type Answers = Vec<[u32; 2]>;
    type Options = LineOfSightOptions;

    fn start(
        self,
        launch: Launch<'_>,
        opts: &LineOfSightOptions,
        mut reuse: Vec<[u32; 2]>,
    ) -> Result<PendingBatch<Vec<[u32; 2]>>, GpuError> {
        let pairs = crate::agents::pairs_among(&self.agents.eyes, self.radius);
        let query = AgentPairs {
            agents: self.agents,
            pairs: &pairs,
            outcomes: false,
        };
        let (job, uploaded) = pair_job(&launch, query, opts, Visibility::default())?;
        reuse.clear();
        let job: Then<PairJob, _, _> = Then {
            job,
            state: (pairs, reuse),
            then: visible,
        };
        Ok(launch.pending(job, uploaded))
    }
}

/// The pairs of `pairs` that `v` says see each other, into `out`.
fn visible(v: Visibility, (pairs, mut out): (Vec<[u32; 2]>, Vec<[u32; 2]>)) -> Vec<[u32; 2]> {
    out.extend(
        pairs
            .iter()
            .enumerate()
            .filter(|&(i, _)| v.visible(i))
            .map(|(_, &p)| p),
    );
    out
}
