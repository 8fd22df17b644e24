//! Device metrics: erase-count summaries, and latencies counted in runs as single records.

use rand::Rng;
use trimlab_device::metrics::*;
use trimlab_device::CommandKind;
use trimlab_sim::SeedTree;

/// Percentiles by nearest rank and a histogram of always 16 bins covering min..=max.
#[test]
fn erase_summary_percentiles_and_histogram() {
    let counts: Vec<u32> = (0..100).map(|i| if i < 90 { 1 } else { 40 + i }).collect();
    let e = EraseSummary::of(&counts);
    assert_eq!((e.min, e.max, e.p50, e.p90, e.p99), (1, 139, 1, 1, 138));
    assert_eq!(e.histogram.blocks.len(), ERASE_HISTOGRAM_BINS as usize);
    assert_eq!((e.histogram.erase_count_min, e.histogram.bin_erases), (1, 9));
    assert_eq!(e.histogram.blocks[0], 90);
    assert_eq!(e.histogram.blocks.iter().sum::<u64>(), 100);
    assert!((e.max_over_mean - 139.0 / e.mean).abs() < 1e-12);
    let even = EraseSummary::of(&[5; 8]);
    assert_eq!((even.histogram.bin_erases, even.histogram.blocks[0], even.max_over_mean), (1, 8, 1.0));
    assert_eq!(EraseSummary::default().histogram.blocks.len(), ERASE_HISTOGRAM_BINS as usize);
}

/// Latencies counted in runs give the histograms of recording each one: runs of equal
/// latencies, kinds interleaved, values past the upper bound (clamped), read mid-way and at
/// the end.
#[test]
fn runs_of_latencies_give_the_histograms_of_single_records() {
    let mut rng = SeedTree::new(3).fork("metrics.latency_runs");
    let mut ours = Latencies::new();
    let mut single = [latency_histogram(), latency_histogram(), latency_histogram(), latency_histogram()];
    let (mut kind, mut latency_ns) = (CommandKind::Write, 2_169u64);
    for step in 0..200_000u32 {
        if rng.gen_range(0..4) == 0 {
            kind = CommandKind::ALL[rng.gen_range(0..4)];
            latency_ns = match rng.gen_range(0..12) {
                0 => u64::MAX - rng.gen_range(0..2),
                1 => 0,
                // Around the upper bound, where the histogram starts to clamp.
                2 => (1 << 50) - 20_000 + rng.gen_range(0..40_000),
                3 => rng.gen_range(1..3),
                _ => rng.gen_range(1..100_000),
            };
        } else if rng.gen_range(0..2) == 0 {
            // Drifting within and across buckets, as a replay's queue waits do.
            latency_ns = latency_ns.saturating_add(rng.gen_range(0..40)).saturating_sub(rng.gen_range(0..20));
        }
        ours.record(kind, latency_ns);
        single[kind as usize].saturating_record(latency_ns);
        if step % 49_999 == 0 || step == 199_999 {
            for k in CommandKind::ALL {
                let (a, b) = (ours.histogram(k), &single[k as usize]);
                assert_eq!((a.len(), a.min(), a.max()), (b.len(), b.min(), b.max()), "{k:?} at {step}");
                assert!(a
                    .iter_recorded()
                    .map(|v| (v.value_iterated_to(), v.count_at_value()))
                    .eq(b.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value()))));
                assert_eq!(ours.summary(k), LatencySummary::of(b));
            }
        }
    }
}
