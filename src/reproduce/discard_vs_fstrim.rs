//! `discard-vs-fstrim` (003): placeholder replaced below.
use super::Options;
pub fn run(_: &Options) -> anyhow::Result<trimlab_report::ExperimentReport> {
    anyhow::bail!("unfinished")
}
