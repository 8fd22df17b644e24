//! Tests of src/shard.rs (moved out of the lib so the crate compiles once).

use trimlab_sweep::shard::*;

#[test]
fn shards_partition_the_runs() {
    let shards: Vec<Shard> = (1..=3).map(|k| format!("{k}/3").parse().unwrap()).collect();
    for run in 0..100 {
        assert_eq!(shards.iter().filter(|s| s.contains(run)).count(), 1, "run {run}");
    }
    assert!(Shard::WHOLE.contains(41));
    assert_eq!(shards[1].to_string(), "2/3");
}

#[test]
fn bad_shards_are_refused_with_the_accepted_form() {
    for text in ["0/3", "4/3", "1/0", "3", "a/b", "1/2/3", ""] {
        let e = text.parse::<Shard>().expect_err(text).to_string();
        assert_eq!(e, format!("--shard {text}: expected K/N with 1 <= K <= N, like 2/8"));
    }
}
