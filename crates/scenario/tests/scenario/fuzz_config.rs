//! Bounded fuzzing of the config loader and the fio job parser (issue 26): text that is almost a
//! valid config, or almost a fio job, never panics the loader, the resolver or a short run.
//!
//! Strategy: start from a small valid config (or fio job) and lay 1 to 6 mutations over it:
//! a known key set to a value from a pool of edge values (0, 1, 2^32, i64::MAX, negative
//! numbers, NaN, infinities, sizes and volumes at and past 2^64, durations past a year, wrong
//! types, enum names of other keys), an unknown key, or a line of arbitrary text. The result is
//! parsed and resolved; when it resolves to a small block-level SSD run, that run goes 300
//! operations (each cost and duration at its worst).
//!
//! Invariants: parse, resolve and run return a value or an error and never panic; an error
//! from a config names a key or a line.
//!
//! Time: 8000 configs and 4000 fio jobs, a few seconds; the runner's random stream is fixed, so a failure
//! repeats on every run and prints the shrunk input.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::collections::BTreeMap;

/// Keys of each section and a few good values for each, so mutations often resolve.
const KEYS: &[(&str, &str, &[&str])] = &[
    (
        "device",
        "preset",
        &["\"nvme-tlc\"", "\"sata-mlc-2011\"", "\"ufs-2018\"", "\"k9lag08u0m-4ch\"", "\"qlc-ssd\""],
    ),
    ("device", "kind", &["\"ssd\"", "\"thin\""]),
    ("device", "logical_bytes", &["\"16MiB\"", "\"4MiB\"", "8192"]),
    ("device", "spare_factor", &["0.1", "0.3", "0.07"]),
    ("device", "channels", &["1", "2", "8"]),
    ("device", "chips_per_channel", &["1", "2"]),
    ("device", "dies_per_chip", &["1", "2"]),
    ("device", "planes_per_die", &["1", "2"]),
    ("device", "blocks_per_plane", &["16", "64"]),
    ("device", "pages_per_block", &["4", "16", "64", "256"]),
    ("device", "page_bytes", &["512", "4096", "16384"]),
    ("device", "flash_page_bytes", &["4096", "16384", "65536"]),
    ("device", "multi_plane", &["true", "false"]),
    ("device", "read_ns", &["50000", "1"]),
    ("device", "program_ns", &["500000", "1"]),
    ("device", "erase_ns", &["1000000"]),
    ("device", "transfer_ps_per_byte", &["833", "0"]),
    ("device", "command_ns", &["100", "0"]),
    ("device", "queue_depth", &["1", "64"]),
    ("device", "trim_queued", &["true", "false"]),
    ("device", "trim_max_ranges", &["1", "256"]),
    ("device", "trim_max_bytes", &["\"4KiB\"", "\"1MiB\""]),
    ("device", "trim_granularity_bytes", &["\"4KiB\"", "\"8KiB\""]),
    ("device", "max_transfer_bytes", &["\"1MiB\"", "\"4KiB\""]),
    ("device", "write_buffer_bytes", &["0", "\"64KiB\"", "\"4MiB\""]),
    ("device", "firmware_ns", &["1000", "0"]),
    ("device", "host_transfer_ps_per_byte", &["285", "0"]),
    ("device", "idle_threshold", &["\"100ms\"", "0"]),
    ("ftl", "kind", &["\"page\"", "\"hybrid\""]),
    ("ftl", "gc_free_blocks", &["2", "\"30%\"", "\"3\""]),
    ("ftl", "gc_victim", &["\"greedy\"", "\"cost-benefit\"", "\"fifo\""]),
    ("ftl", "track_data", &["true"]),
    ("ftl", "idle_gc", &["true", "false"]),
    ("ftl", "idle_gc_free_blocks", &["4", "\"10%\""]),
    ("ftl", "striping", &["\"page\"", "\"block\""]),
    ("ftl", "backward_map", &["\"eager\"", "\"lazy\""]),
    ("ftl", "reconcile_every_pages", &["0", "64"]),
    ("ftl", "erase_when_invalid", &["true"]),
    ("ftl", "gc_gain_blocks_max", &["1", "4"]),
    ("ftl", "log_blocks_sequential", &["1"]),
    ("ftl", "log_blocks_random", &["4"]),
    ("ftl", "trimmed_list", &["true", "false"]),
    ("ftl", "trimmed_list_groups", &["1", "1024"]),
    (
        "ftl",
        "mapping_unit",
        &[
            "\"4KiB\"",
            "\"8KiB\"",
            "\"16KiB\"",
            "\"32KiB\"",
            "\"64KiB\"",
            "16384",
            "\"12KiB\"",
            "\"128KiB\"",
            "\"2KiB\"",
        ],
    ),
    ("trim", "engine", &["\"immediate\"", "\"none\"", "\"delayed\""]),
    ("trim.cost", "command_ns", &["5000"]),
    ("trim.cost", "map_invalidate_ns", &["50"]),
    ("trim.cost", "bitmap_word_ns", &["10"]),
    ("trim.delayed", "bitmap", &["\"full\"", "\"partial\""]),
    ("trim.delayed", "partial_region_pages", &["64", "32768"]),
    ("trim.delayed", "trim_buffer_entries", &["256", "65536"]),
    ("trim.delayed", "before_gc", &["\"all\"", "\"512MiB\""]),
    ("trim.delayed", "idle_chunk_pages", &["1", "1024"]),
    ("workload", "pattern", &["\"sequential\"", "\"uniform-random\"", "\"hot-cold\"", "\"zipf\""]),
    ("workload", "hot_fraction", &["0.2"]),
    ("workload", "hot_access", &["0.8"]),
    ("workload", "zipf_theta", &["0.99", "1.2"]),
    ("workload", "read_fraction", &["0.0", "0.3", "1.0"]),
    ("workload", "trim_fraction", &["0.1", "1.0", "0.5"]),
    ("workload", "block_bytes", &["4096", "\"64KiB\"", "\"1MiB\"", "512"]),
    ("workload", "trim_bytes", &["4096", "\"1MiB\""]),
    ("workload", "region_offset", &["0", "\"1MiB\""]),
    ("workload", "region_bytes", &["\"1MiB\"", "\"8MiB\""]),
    ("workload", "queue_depth", &["1", "32"]),
    ("workload", "writes", &["\"1x\"", "\"1MiB\""]),
    ("workload", "ops", &["100", "0"]),
    ("workload", "idle_every", &["0", "10"]),
    ("workload", "idle", &["\"1ms\"", "0"]),
    ("workload", "think_time", &["\"10us\"", "0"]),
    ("workload", "precondition", &["\"none\"", "\"fill\"", "\"steady\""]),
    ("workload", "precondition_writes", &["\"0.5x\"", "\"1MiB\""]),
    ("workload", "flush_every", &["0", "2"]),
    ("workload", "kind", &["\"block\"", "\"aging\"", "\"postmark\"", "\"os-install\""]),
    ("workload", "utilization", &["0.5"]),
    ("workload", "files", &["4"]),
    ("workload", "file_bytes", &["\"1MiB\""]),
    ("host", "fs", &["\"none\"", "\"ext4\""]),
    ("host", "discard", &["\"discard\"", "\"fstrim:2s\"", "\"selective:10:90\""]),
    ("host", "commit_interval", &["\"100ms\""]),
    ("host", "blocks_per_group", &["64", "32768"]),
    ("thin", "lanes", &["8"]),
    ("thin", "chunk_bytes", &["\"8KiB\""]),
    ("thin", "io_ps_per_byte", &["1000"]),
    ("thin", "trim_command", &["\"200us\""]),
    ("output", "interval", &["\"1ms\"", "\"100ms\""]),
];

/// Values at the edges of every type, and of other keys' types.
const EDGES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "65536",
    "65537",
    "2147483647",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "0.0",
    "-0.0",
    "0.5",
    "0.9999",
    "1.5",
    "1e-300",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "true",
    "\"\"",
    "\"x\"",
    "\"0\"",
    "\"-1\"",
    "\"0B\"",
    "\"1B\"",
    "\"511\"",
    "\"16777216TiB\"",
    "\"16777215TiB\"",
    "\"18446744073709551616\"",
    "\"18446744073709551615B\"",
    "\"1e30\"",
    "\"1e30x\"",
    "\"1000000x\"",
    "\"nanx\"",
    "\"infx\"",
    "\"-2x\"",
    "\"0x\"",
    "\"365d\"",
    "\"366d\"",
    "\"213503d\"",
    "\"9223372036854775807ns\"",
    "\"0.5ns\"",
    "\"1ns\"",
    "\"5%\"",
    "\"49.9%\"",
    "\"50%\"",
    "\"nan%\"",
    "\"inf%\"",
    "\"1e-300%\"",
    "\"-5%\"",
    "\"fstrim:0s\"",
    "\"fstrim:366d\"",
    "\"selective:90:10\"",
    "\"é\"",
    "[]",
    "[1, 2]",
    "{}",
    "{ a = 1 }",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// KEYS[key] set to one of its good values or an edge value.
    Set { key: usize, value: String },
    /// An unknown key in a known section.
    Unknown { section: usize, name: String },
    /// A raw line appended at the end.
    Raw(String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let good = (0..KEYS.len(), any::<prop::sample::Index>())
        .prop_map(|(key, i)| Mutation::Set { key, value: i.get(KEYS[key].2).to_string() });
    let edge = (0..KEYS.len(), prop::sample::select(EDGES))
        .prop_map(|(key, value)| Mutation::Set { key, value: value.to_string() });
    let unknown =
        (0..KEYS.len(), "[a-z_]{1,12}").prop_map(|(section, name)| Mutation::Unknown { section, name });
    let raw = prop_oneof![
        "[ -~]{0,40}",
        "\\PC{0,20}",
        Just("[[phase]]\nkind = \"trim-burst\"".to_string()),
        Just("[[phase]]\nkind = \"idle\"\nduration = \"365d\"".to_string()),
        Just("[[phase]]\nkind = \"age\"\nwrites = \"1000000x\"".to_string()),
        Just("[[phase]]\nkind = \"workload\"\n[phase.workload]\nops = 10".to_string()),
        Just("seed = 18446744073709551615".to_string()),
        Just("seed = -1".to_string()),
    ]
    .prop_map(Mutation::Raw);
    prop_oneof![12 => good, 6 => edge, 1 => unknown, 1 => raw]
}

/// The base config, then the mutations, as TOML text.
fn config_text(mutations: &[Mutation]) -> String {
    let mut sections: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    for (key, value) in [
        ("logical_bytes", "\"16MiB\""),
        ("channels", "1"),
        ("chips_per_channel", "1"),
        ("dies_per_chip", "1"),
        ("planes_per_die", "2"),
        ("pages_per_block", "32"),
        ("spare_factor", "0.2"),
    ] {
        sections.entry("device").or_default().insert(key.into(), value.into());
    }
    sections.entry("workload").or_default().insert("precondition".into(), "\"fill\"".into());
    let mut raw = Vec::new();
    for m in mutations {
        match m {
            Mutation::Set { key, value } => {
                let (section, name, _) = KEYS[*key];
                sections.entry(section).or_default().insert(name.into(), value.clone());
            }
            Mutation::Unknown { section, name } => {
                sections.entry(KEYS[*section].0).or_default().insert(name.clone(), "1".into());
            }
            Mutation::Raw(line) => raw.push(line.clone()),
        }
    }
    let mut text = String::new();
    for (section, keys) in &sections {
        text += &format!("[{section}]\n");
        for (key, value) in keys {
            text += &format!("{key} = {value}\n");
        }
    }
    for line in raw {
        text += &line;
        text.push('\n');
    }
    text
}

/// Parses, resolves and, when it is a small block-level SSD run, runs `text` for 300
/// operations. Any outcome but a panic is fine; an error must say where.
fn load_and_run(text: &str) -> Result<(), TestCaseError> {
    STAGE.with(|c| c.borrow_mut()[0] += 1);
    let config = match trimlab_scenario::RunConfig::parse(text, "fuzz.toml") {
        Ok(config) => config,
        Err(e) => {
            let e = e.to_string();
            prop_assert!(e.contains("fuzz.toml") || e.starts_with("config: "), "unplaced error: {e}\n{text}");
            return Ok(());
        }
    };
    STAGE.with(|c| c.borrow_mut()[1] += 1);
    let resolved = match config.resolve() {
        Ok(resolved) => resolved,
        Err(e) => {
            prop_assert!(!e.key.is_empty(), "an error without its key: {e}\n{text}");
            return Ok(());
        }
    };
    let small =
        resolved.device.logical_bytes() <= 64 << 20 && resolved.device.geometry.physical_pages() <= 1 << 16;
    let block = resolved.host.is_none()
        && resolved.thin.is_none()
        && config.phases.is_empty()
        && resolved.workload.kind == trimlab_workload::WorkloadKind::Block;
    STAGE.with(|c| c.borrow_mut()[2] += 1);
    if small && block {
        STAGE.with(|c| c.borrow_mut()[3] += 1);
        let mut bounded = config.clone();
        bounded.workload.ops = Some(300);
        bounded.workload.precondition_writes = trimlab_workload::Volume::Capacity(0.1);
        // Refusals (a command the device does not take, the clock's end) are errors, not panics.
        if trimlab_scenario::run(&bounded, None, &mut ()).is_ok() {
            STAGE.with(|c| c.borrow_mut()[4] += 1);
        }
    }
    Ok(())
}

thread_local! {
    static STAGE: std::cell::RefCell<[u32; 5]> = const { std::cell::RefCell::new([0; 5]) };
}

fn runner(cases: u32) -> TestRunner {
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 256, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

#[test]
fn arbitrary_configs_never_panic_the_loader_or_a_short_run() {
    let result = runner(8000)
        .run(&prop::collection::vec(mutation(), 1..=5), |mutations| load_and_run(&config_text(&mutations)));
    if let Err(e) = result {
        panic!("{e}");
    }
    // Cases that reached each stage: loaded, parsed, resolved, small enough to run, ran.
    let stages = STAGE.with(|c| *c.borrow());
    eprintln!("fuzz_config: cases loaded / parsed / resolved / run / ran ok: {stages:?}");
    assert!(stages[2] >= 1000 && stages[4] >= 800, "too few cases get far: {stages:?}");
}

/// fio options and values, good and bad.
const FIO_LINES: &[&str] = &[
    "rw=write",
    "rw=randwrite",
    "rw=read",
    "rw=randrw",
    "rw=trim",
    "rw=randtrim",
    "rw=trimwrite",
    "rw=",
    "rw",
    "bs=4k",
    "bs=1m",
    "bs=0",
    "bs=3",
    "bs=16777216t",
    "bs=18446744073709551615",
    "bs=4k,8k",
    "size=8m",
    "size=0",
    "size=16777216t",
    "size=99999999999999999999",
    "offset=1m",
    "offset=18446744073709551615",
    "io_size=1g",
    "iodepth=0",
    "iodepth=4294967295",
    "iodepth=8",
    "number_ios=0",
    "number_ios=18446744073709551615",
    "number_ios=100",
    "rwmixread=70",
    "rwmixread=101",
    "rwmixwrite=0",
    "random_distribution=zipf:1.2",
    "random_distribution=zipf:nan",
    "random_distribution=zipf:inf",
    "random_distribution=zipf:0",
    "thinktime=18446744073709551615",
    "thinktime=366d",
    "thinktime=100",
    "numjobs=1",
    "numjobs=2",
    "ioengine=libaio",
    "verify=crc32c",
    "[global]",
    "[job]",
    "[other]",
    "[unclosed",
    "; comment",
    "=",
    "é=é",
];

#[test]
fn arbitrary_fio_jobs_never_panic_the_parser_or_a_short_run() {
    let line = prop_oneof![8 => prop::sample::select(FIO_LINES).prop_map(str::to_string), 1 => "\\PC{0,30}"];
    let base_text = "[device]\nlogical_bytes = \"16MiB\"\nchannels = 1\nplanes_per_die = 2\npages_per_block = 32\nspare_factor = 0.2\n";
    let base = trimlab_scenario::RunConfig::parse(base_text, "base.toml").unwrap();
    let result = runner(4000).run(&prop::collection::vec(line, 0..12), |lines| {
        let text = format!("[job]\n{}\n", lines.join("\n"));
        let Ok(job) = trimlab_workload::parse_fio_job(&text, "job.fio", &base.workload) else {
            return Ok(());
        };
        let mut config = base.clone();
        config.workload = job.workload;
        if config.resolve().is_ok() {
            if config.workload.ops.is_none_or(|n| n > 300) {
                config.workload.ops = Some(300);
            }
            config.workload.precondition_writes = trimlab_workload::Volume::Capacity(0.1);
            let _ = trimlab_scenario::run(&config, None, &mut ());
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

const UNITS: [u64; 5] = [4096, 8192, 16384, 32768, 65536];

/// The mapping-unit property's cases: the unit's TOML text, the device page, pages per
/// block, the FTL kind, and the workload's write and TRIM sizes.
fn unit_case() -> impl Strategy<Value = (String, u32, u32, &'static str, u64, u64)> {
    let unit_text = prop_oneof![
        4 => prop::sample::select(&UNITS[..]).prop_map(|u| format!("\"{}KiB\"", u >> 10)),
        2 => any::<u64>().prop_map(|n| n.to_string()),
        2 => (0u64..=256).prop_map(|k| format!("\"{k}KiB\"")),
        1 => (0u64..=70_000).prop_map(|b| b.to_string()),
        1 => prop::sample::select(EDGES).prop_map(str::to_string),
    ];
    const SIZES: [u64; 6] = [512, 4096, 6144, 16384, 65536, 1 << 20];
    (
        unit_text,
        prop::sample::select(&[512u32, 4096, 8192, 16384][..]),
        prop::sample::select(&[3u32, 4, 16, 32, 64][..]),
        prop::sample::select(&["page", "hybrid"][..]),
        prop::sample::select(&SIZES[..]),
        prop::sample::select(&SIZES[..]),
    )
}

/// `[ftl] mapping_unit` (issue 27): a random unit (an accepted size, any byte count, a size
/// string of any KiB, a wrong type) over random device pages, erase blocks, FTL kinds and
/// write and TRIM sizes. Invariants: nothing panics; the resolver accepts a unit exactly when
/// it is one of the five sizes, whole device pages and a divisor of the erase block, and an
/// error about it names `ftl.mapping_unit`; an accepted unit is the FTL's page; a short run's
/// ineffective TRIM bytes never exceed the TRIM bytes the drive received.
#[test]
fn random_mapping_units_are_accepted_or_refused_by_name_and_never_panic() {
    let case = unit_case();
    let (resolved_count, ran) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let result = runner(1500).run(&case, |(unit, page, ppb, kind, block, trim)| {
        let text = format!(
            "[device]\nlogical_bytes = \"16MiB\"\nchannels = 1\nchips_per_channel = 1\ndies_per_chip = 1\nplanes_per_die = 2\npage_bytes = {page}\nflash_page_bytes = {page}\npages_per_block = {ppb}\nspare_factor = 0.25\n[ftl]\nkind = \"{kind}\"\nmapping_unit = {unit}\n[workload]\npattern = \"uniform-random\"\nblock_bytes = {block}\ntrim_bytes = {trim}\ntrim_fraction = 0.3\nprecondition = \"fill\"\n"
        );
        let config = match trimlab_scenario::RunConfig::parse(&text, "fuzz.toml") {
            Ok(config) => config,
            Err(e) => {
                let e = e.to_string();
                prop_assert!(e.contains("fuzz.toml") || e.starts_with("config: "), "unplaced error: {e}\n{text}");
                return Ok(());
            }
        };
        let Some(bytes) = config.ftl.mapping_unit.map(|u| u.0) else {
            return Err(TestCaseError::fail(format!("mapping_unit parsed to nothing\n{text}")));
        };
        let fits = UNITS.contains(&bytes)
            && bytes >= page as u64
            && bytes.is_multiple_of(page as u64)
            && (page as u64 * ppb as u64).is_multiple_of(bytes);
        let resolved = match config.resolve() {
            Ok(resolved) => resolved,
            Err(e) => {
                prop_assert!(e.key != "ftl.mapping_unit" || !fits, "a valid unit refused: {e}\n{text}");
                // Refused for another key: without the unit it must still be refused.
                let mut without = config.clone();
                without.ftl.mapping_unit = None;
                prop_assert!(
                    e.key == "ftl.mapping_unit" || without.resolve().is_err(),
                    "the unit's fault blamed on {}: {e}\n{text}",
                    e.key
                );
                return Ok(());
            }
        };
        resolved_count.set(resolved_count.get() + 1);
        prop_assert!(fits, "an invalid unit {bytes} accepted\n{text}");
        prop_assert_eq!(resolved.device.geometry.page_bytes as u64, bytes, "the unit is the FTL's page");
        let mut bounded = config.clone();
        bounded.workload.ops = Some(300);
        bounded.workload.precondition_writes = trimlab_workload::Volume::Capacity(0.1);
        if let Ok(result) = trimlab_scenario::run(&bounded, None, &mut ()) {
            ran.set(ran.get() + 1);
            let r = &result.report;
            let (ineffective, received) = (r.trim.trim_bytes_ineffective, r.host.trim_bytes_with_unit);
            prop_assert!(ineffective <= received, "{ineffective} of {received} TRIM bytes ineffective");
            if bytes == page as u64 {
                prop_assert_eq!((ineffective, received), (0, 0), "the page is the unit: nothing counted");
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (resolved_count, ran) = (resolved_count.get(), ran.get());
    eprintln!("fuzz_config: mapping units resolved {resolved_count}, ran {ran} of 1500");
    assert!(
        resolved_count >= 150 && ran >= 100,
        "too few cases get far: {resolved_count} resolved, {ran} ran"
    );
}
