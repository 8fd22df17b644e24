//! Impressions' file size distribution: the normal CDF it is built on, and samples that follow it.

use trimlab_scenario::phases::file_size_dist::{ks_distance, normal_cdf, FileSizeDist};
use trimlab_sim::SeedTree;

#[test]
fn normal_cdf_matches_known_values() {
    for (z, p) in [(0.0, 0.5), (1.0, 0.841_344_746), (-1.96, 0.024_997_895), (3.0, 0.998_650_102)] {
        assert!((normal_cdf(z) - p).abs() < 1e-6, "Φ({z}) = {} not {p}", normal_cdf(z));
    }
}

/// The sampler follows the published distribution: KS distance below the 1 % critical
/// value 1.63/√n for n = 20 000 draws (0.0115), for every seed tried.
#[test]
fn samples_pass_a_kolmogorov_smirnov_test() {
    let dist = FileSizeDist::impressions(1 << 40);
    for seed in [1u64, 2, 3] {
        let mut rng = SeedTree::new(seed).fork("sizes");
        let mut sizes: Vec<u64> = (0..20_000).map(|_| dist.sample(&mut rng)).collect();
        let d = ks_distance(&dist, &mut sizes);
        assert!(d < 1.63 / (20_000f64).sqrt(), "seed {seed}: KS distance {d}");
    }
    // The check can fail: a lognormal with another μ is refused.
    let mut rng = SeedTree::new(1).fork("sizes");
    let mut off: Vec<u64> = (0..20_000).map(|_| dist.sample(&mut rng) * 2).collect();
    assert!(ks_distance(&dist, &mut off) > 1.63 / (20_000f64).sqrt());
}
