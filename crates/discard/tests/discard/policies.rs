//! Tests of src/lib.rs: the policy registry, keys, parsing and each policy's queue (moved out of the lib so the crate compiles once).

use trimlab_discard::*;
use trimlab_sim::SimTime;

#[test]
fn every_policy_is_unique_helped_and_round_trips() {
    for (i, s) in POLICIES.iter().enumerate() {
        assert!(POLICIES[..i].iter().all(|o| o.name != s.name), "{} registered twice", s.name);
        assert!(!s.help.trim().is_empty(), "{} has no help", s.name);
        assert_eq!(s.example.name(), s.name, "{}'s example is of its own kind", s.name);
        let text = s.example.config_name();
        assert_eq!(parse(&text), Ok(ParsedPolicy::plain(s.example)), "{text} round-trips");
        assert_eq!(PolicyKind::parse(&text), Ok(s.example));
        assert!(parse(s.name).is_ok(), "the bare name {} parses", s.name);
        assert_eq!(build(s.example, &PolicyParams::default(), 4096).kind(), s.example);
        assert_eq!(serde_json::to_string(&s.example).unwrap(), format!("\"{text}\""));
        assert_eq!(format!("{:?}", s.example), text);
    }
}

#[test]
fn keys_are_one_declaration_each_and_their_defaults_pass_their_check() {
    let all = keys();
    for key in POLICIES.iter().flat_map(|s| s.keys) {
        let first = all.iter().find(|k| k.name == key.name).unwrap();
        assert_eq!(*first, key, "{}: two policies declare it differently", key.name);
        assert!(!key.help.trim().is_empty(), "{} has no help", key.name);
        assert_eq!(key.check(key.default), Ok(()), "{}'s default", key.name);
    }
    assert_eq!(host_key("lazy_workers_max"), Some(&lazy::WORKERS_MAX));
    assert_eq!(host_key("async_tick"), None, "set by the model only");
    assert_eq!(readers(&lazy::WORKERS_MAX), ["lazy", "lazy-reuse"]);
    assert_eq!(lazy::WORKERS_MAX.check(0), Err("must be > 0".to_string()));
}

#[test]
fn params_read_defaults_until_set_and_serialize_only_what_is_set() {
    let mut p = PolicyParams::default();
    assert_eq!(p.get(&btrfs_async::DELAY), 120_000_000_000);
    assert_eq!(serde_json::to_string(&p).unwrap(), "{}");
    p.set(&btrfs_async::DELAY, 5_000_000_000);
    p.set(&btrfs_async::MERGE_FREE, 1);
    p.set(&lazy::WORKERS_MAX, 8);
    assert!(p.flag(&btrfs_async::MERGE_FREE) && p.get(&lazy::WORKERS_MAX) == 8);
    let json = r#"{"async_delay":"5s","async_merge_free":true,"lazy_workers_max":8}"#;
    assert_eq!(serde_json::to_string(&p).unwrap(), json);
    let mut q = PolicyParams::default().with(&lazy::WORKERS_MAX, 2).with(&fstrim::PERIOD, 1);
    q.overlay(&p);
    assert_eq!((q.get(&lazy::WORKERS_MAX), q.get(&fstrim::PERIOD)), (8, 1));
}

#[test]
fn arguments_parse_in_their_policy() {
    assert_eq!(parse("selective").unwrap().kind, PolicyKind::selective(40, 90));
    assert_eq!(parse("selective:60:70").unwrap().kind.label(), "SeT(60,70)");
    assert!(parse("selective:70:60").unwrap_err().contains("LOW <= HIGH"));
    assert!(parse("selective:x").unwrap_err().contains("selective:LOW:HIGH"));
    assert_eq!(
        parse("fstrim:2s"),
        Ok(ParsedPolicy {
            kind: PolicyKind::Fstrim,
            params: PolicyParams::default().with(&fstrim::PERIOD, 2_000_000_000)
        })
    );
    assert!(parse("fstrim:2").unwrap_err().contains("needs a unit"));
    assert!(parse("fstrim:0s").unwrap_err().contains("> 0"));
    assert!(parse("lazy:3").unwrap_err().contains("takes no arguments"));
    assert!(PolicyKind::parse("fstrim:1h").is_err(), "the period has nowhere to go there");
}

#[test]
fn a_bad_name_lists_the_policies_and_the_closest() {
    let e = parse("lazy_reuse").unwrap_err();
    assert!(e.contains("did you mean \"lazy-reuse\"?"), "{e}");
    assert!(e.contains("selective:LOW:HIGH") && e.contains("fstrim:PERIOD"), "{e}");
}

fn fr(start: u64, len: u64) -> FreedRun {
    FreedRun { run: Run::new(start, len), freed_at: SimTime::ZERO }
}

#[test]
fn selective_follows_watermarks_and_trend() {
    let mut p = build(PolicyKind::selective(40, 80), &PolicyParams::default(), 4096);
    let on =
        |p: &mut Box<dyn TrimPolicy>, u: f64| !p.on_commit(SimTime::ZERO, vec![fr(0, 1)], u).trim.is_empty();
    assert!(on(&mut p, 0.9), "above high: on");
    assert!(!on(&mut p, 0.3), "below low: off");
    assert!(!on(&mut p, 0.5), "rising between: off");
    assert!(on(&mut p, 0.45), "falling between: on");
    assert!(on(&mut p, 0.45), "flat between: keeps state");
}

#[test]
fn lazy_releases_a_batch_when_all_trimmed_and_reuse_cancels() {
    let mut p = build(PolicyKind::LazyReuse, &PolicyParams::default(), 4096);
    p.on_commit(SimTime::ZERO, vec![fr(0, 4), fr(10, 4)], 0.5);
    assert_eq!(p.reuse(2), Some(Run::new(0, 2)));
    let WorkerPick::Trim { ticket, run, .. } = p.next_for_worker(SimTime::ZERO) else { panic!() };
    assert_eq!(run, Run::new(2, 2));
    p.trim_done(ticket, SimTime(5));
    assert!(p.drain_releasable().is_empty(), "batch not done");
    let WorkerPick::Trim { ticket, .. } = p.next_for_worker(SimTime(5)) else { panic!() };
    p.trim_done(ticket, SimTime(9));
    let rel: Vec<Run> = p.drain_releasable().into_iter().map(|f| f.run).collect();
    assert_eq!(rel, vec![Run::new(2, 2), Run::new(10, 4)]);
    assert_eq!(p.stats().reuse_cancelled_blocks, 2);
}

#[test]
fn async_waits_for_delay_and_prefers_large() {
    let params = PolicyParams::default().with(&btrfs_async::DELAY, 100);
    let mut p = build(PolicyKind::Async, &params, 4096);
    // 16 blocks = 64 KiB (medium list), 512 blocks = 2 MiB (large list), 2 blocks ignored.
    let plan = p.on_commit(SimTime(0), vec![fr(0, 16), fr(100, 512), fr(1000, 2)], 0.5);
    assert_eq!(plan.release.len(), 3, "async frees at once");
    assert_eq!(p.next_for_worker(SimTime(10)), WorkerPick::WaitUntil(SimTime(100)));
    let WorkerPick::Trim { run, hold, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
    assert_eq!((run, hold), (Run::new(100, 512), true));
    p.on_allocate(Run::new(4, 4));
    assert_eq!(p.stats().reuse_cancelled_blocks, 4);
    assert_eq!(p.queued_available(), vec![Run::new(8, 8)], "the 4-block head fell below the min filter");
}

#[test]
fn async_unused_block_group_is_due_after_the_short_delay() {
    let params = PolicyParams::default()
        .with(&btrfs_async::DELAY, 100)
        .with(&btrfs_async::UNUSED_DELAY, 10)
        .with(&btrfs_async::IOPS_LIMIT, 0);
    let mut p = build(PolicyKind::Async, &params, 4096);
    p.on_commit(SimTime(0), vec![fr(0, 512), fr(1000, 512)], 0.5);
    // The commit left the block group [900, 2000) with nothing in use: due at 10, not 100.
    assert!(p.unused_delay(Run::new(900, 1100), SimTime(0)));
    let WorkerPick::Trim { run, .. } = p.next_for_worker(SimTime(10)) else { panic!() };
    assert_eq!(run, Run::new(1000, 512));
    assert_eq!(p.next_for_worker(SimTime(11)), WorkerPick::WaitUntil(SimTime(100)), "the other keeps 100");
}

#[test]
fn async_block_group_keeps_its_eligible_time() {
    let params = PolicyParams::default().with(&btrfs_async::DELAY, 100).with(&btrfs_async::IOPS_LIMIT, 0);
    let mut p = build(PolicyKind::Async, &params, 4096);
    p.on_commit(SimTime(0), vec![fr(0, 512)], 0.5);
    p.on_commit(SimTime(60), vec![fr(1000, 512), fr(5000, 512)], 0.5);
    // [0, 2000) was on the list since 0: its extent freed at 60 is due at 100 with it;
    // [4000, 6000) was not: 160.
    p.block_group_queued(Run::new(0, 2000));
    p.block_group_queued(Run::new(4000, 2000));
    let WorkerPick::Trim { run, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
    assert_eq!(run, Run::new(0, 512));
    let WorkerPick::Trim { run, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
    assert_eq!(run, Run::new(1000, 512), "due with its block group");
    assert_eq!(p.next_for_worker(SimTime(100)), WorkerPick::WaitUntil(SimTime(160)));
}

#[test]
fn async_restart_delay_requeues_a_block_group() {
    // iops_limit 0: no spacing between discards, to see the delays alone.
    let params = PolicyParams::default().with(&btrfs_async::DELAY, 100).with(&btrfs_async::IOPS_LIMIT, 0);
    let mut p = build(PolicyKind::Async, &params, 4096);
    p.on_commit(SimTime(0), vec![fr(0, 512), fr(1000, 512)], 0.5);
    // The cleaner requeues the block group [900, 2000) at 50: its run waits until 150.
    assert!(p.restart_delay(Run::new(900, 1100), SimTime(50)));
    assert!(!p.restart_delay(Run::new(5000, 10), SimTime(50)), "nothing queued there");
    let WorkerPick::Trim { run, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
    assert_eq!(run, Run::new(0, 512), "the other block group keeps its time");
    assert_eq!(p.next_for_worker(SimTime(101)), WorkerPick::WaitUntil(SimTime(150)));
}
