//! Filebench values: numbers with suffixes and the random variables (cvar) of sizes.

use rand::SeedableRng;
use trimlab_importers::filebench::value::{number, Amount};
use trimlab_sim::SimRng;

#[test]
fn numbers_and_suffixes() {
    assert_eq!(number("16k"), Ok(16384));
    assert_eq!(number("1m"), Ok(1 << 20));
    assert_eq!(number("60"), Ok(60));
    assert!(number("1.5m").unwrap_err().contains("whole number"));
}

#[test]
fn gamma_sizes_have_filebench_mean() {
    let a = Amount::parse("cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)").unwrap();
    assert!((a.mean() - 131072.0).abs() < 1e-6);
    let mut rng = SimRng::seed_from_u64(7);
    let n = 20_000;
    let mean = (0..n).map(|_| a.draw(&mut rng) as f64).sum::<f64>() / n as f64;
    assert!((mean / 131072.0 - 1.0).abs() < 0.03, "{mean}");
    let r = Amount::parse("cvar(type=cvar-uniform,parameters=lower:10;upper:20,round=10)").unwrap();
    assert!((0..100).all(|_| matches!(r.draw(&mut rng), 10 | 20)));
    assert!(Amount::parse("cvar(type=cvar-weibull,parameters=a:1)")
        .unwrap_err()
        .contains("accepted: cvar-gamma"));
}
