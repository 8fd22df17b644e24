//! Tests of src/cost_model.rs (moved out of the lib so the crate compiles once).

use trimlab_trim::cost_model::*;

#[test]
fn default_split_matches_002_for_one_mebibyte() {
    let c = TrimCostModel::default();
    let pages = 256u64;
    let step1 = c.step1_ns(1);
    let step23 = pages * (c.buffer_lookup_ns + c.map_lookup_ns + c.map_invalidate_ns);
    let share = step23 as f64 / (step1 + step23) as f64;
    assert!((0.78..0.85).contains(&share), "steps 2+3 share {share}");
}

#[test]
fn nvme_model_reproduces_both_fio_threads() {
    let c = TrimCostModel::nvme_fio();
    // axboe/fio#764: 63-71 us for a 4 KiB TRIM, host path included.
    let one_page = c.single_range_ns(1);
    assert!((55_000..=71_000).contains(&one_page), "{one_page}");
    // axboe/fio#396: 27 s / (74 GiB / 512 KiB) = 178 us per 512 KiB TRIM.
    let per_cmd = 27e9 / (74.0 * 2048.0);
    let half_mib = c.single_range_ns(128) as f64;
    assert!((half_mib / per_cmd - 1.0).abs() < 0.05, "{half_mib} vs {per_cmd}");
}

#[test]
fn era_models_cost_milliseconds_and_grow_with_size() {
    let c = TrimCostModel::sata_2011();
    assert!(c.single_range_ns(1) >= 1_000_000);
    assert!(c.single_range_ns(256) > c.single_range_ns(1) + 200_000);
    assert_eq!(c.clone().with_command_ns(5_000).command_ns, 5_000);
}

#[test]
fn overrides_replace_only_the_keys_given() {
    let o = TrimCostOverrides { command_ns: Some(7), ..Default::default() };
    let m = o.apply(TrimCostModel::sata_2011());
    assert_eq!(m.command_ns, 7);
    assert_eq!(m.map_invalidate_ns, TrimCostModel::sata_2011().map_invalidate_ns);
    assert_eq!(
        TrimCostOverrides::all(&TrimCostModel::nvme_fio()).apply(TrimCostModel::sata_2011()),
        TrimCostModel::nvme_fio()
    );
}
