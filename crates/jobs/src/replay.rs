//! `replay`: a block trace on a device config, to the metrics `trimlab replay` writes and
//! `trimlab.replay()` returns (the replay itself is `trimlab_replay::replay_on`).

use anyhow::Result;
/// blktrace's binary per-CPU files as one trace: the adapter finds and opens them.
pub use trimlab_replay::blktrace_bin::{cpu_file_name, is_blktrace, BlktraceLines};
use trimlab_replay::trace_options::TraceOptions;
pub use trimlab_replay::{replay_on, Replayed, TraceInput, SATURATED_QUEUE_SHARE};
use trimlab_scenario::RunConfig;

/// Replays `input` on the device of `config` with the knobs of `options`; `log_interval`
/// (e.g. "100ms") overrides `[output] interval` for the time series.
pub fn replay(
    config: &RunConfig,
    input: TraceInput,
    options: &TraceOptions,
    log_interval: Option<&str>,
) -> Result<Replayed> {
    let device = trimlab_device::SsdConfig::resolve(&config.device, &config.ftl, &config.trim)?;
    let parsed = options.parse()?;
    let interval_ns = config.output.interval_ns(log_interval)?;
    replay_on(&device, input, &parsed, parsed.trims, interval_ns)
}
