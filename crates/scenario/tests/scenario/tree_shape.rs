//! The aged directory tree of Impressions' generative model: Poisson file depths, deep and skewed trees.

use trimlab_scenario::phases::tree_shape::{poisson, TreeShape, FILE_DEPTH_MEAN};
use trimlab_sim::SeedTree;

#[test]
fn poisson_mean_is_close() {
    let mut rng = SeedTree::new(3).fork("depth");
    let n = 50_000;
    let mean = (0..n).map(|_| poisson(&mut rng, FILE_DEPTH_MEAN)).sum::<usize>() as f64 / n as f64;
    // Standard error sqrt(6.49 / 50 000) = 0.011: 5 of them.
    assert!((mean - FILE_DEPTH_MEAN).abs() < 0.06, "mean depth {mean}");
}

/// Preferential attachment makes a few directories hold many subdirectories and the
/// tree several levels deep; every path's parent exists before it.
#[test]
fn the_tree_grows_deep_and_skewed() {
    let mut rng = SeedTree::new(5).fork("tree");
    let mut t = TreeShape::new("a");
    let paths: Vec<String> = (0..2000).map(|_| t.grow(&mut rng)).collect();
    for p in &paths {
        if let Some((parent, _)) = p.rsplit_once('/') {
            assert!(paths.iter().position(|q| q == parent) < paths.iter().position(|q| q == p));
        }
    }
    assert!(t.max_depth() >= 5, "depth {}", t.max_depth());
    let mut children = vec![0u64; t.paths.len()];
    for &p in &t.parents {
        children[p] += 1;
    }
    let max = *children.iter().max().unwrap();
    assert!(max >= 20, "the most popular directory has {max} subdirectories");
    let place = t.place(&mut rng).to_string();
    assert!(place.is_empty() || paths.contains(&place));
}
