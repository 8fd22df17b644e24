//! fio job files as fio runs them (issue 23, item 1): the three ordinary files of the issue
//! run with fio's meaning, and every block-I/O job file of fio's own examples/ is accepted or
//! refused with the reason docs/config.md gives for it.

use serde_json::Value;
use trimlab_jobs::run::{run, FioJob};

/// Runs `text` as a fio job file on the default device (8 GiB), without a config.
fn run_fio(text: &str, origin: &str) -> Value {
    let config = trimlab_jobs::default_config(&[]).unwrap();
    let fio = FioJob { text, origin };
    run(config, false, Some(fio), None, None, &mut (), None).unwrap().result.metrics
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/examples/fio/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

const CAPACITY: u64 = 8 << 30;
const BUFFER_PAGES: u64 = 1024; // the default preset's write buffer

#[test]
fn fill_then_trim_fills_half_then_trims_it_on_the_same_drive() {
    let m = run_fio(&example("fill-then-trim.fio"), "fill-then-trim.fio");
    let phases = m["phases"].as_array().unwrap();
    let names: Vec<_> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fill", "trim-it"]);
    assert_eq!(u(&phases[0]["device"]["write_bytes"]), CAPACITY / 2, "size=50% of the drive");
    assert_eq!(
        u(&phases[1]["device"]["trim_bytes"]),
        CAPACITY / 2,
        "the second job trims what the first wrote"
    );
    assert_eq!(u(&phases[1]["device"]["trim_commands"]), (CAPACITY / 2) >> 20, "bs=1m TRIMs");
    assert_eq!(u(&m["report"]["valid_pages"]), 0, "the filled half ends trimmed");
}

#[test]
fn time_based_randrw_with_four_clones_runs_for_its_runtime() {
    let m = run_fio(&example("randrw-4jobs.fio"), "randrw-4jobs.fio");
    let phase = &m["phases"][0];
    let elapsed = u(&phase["elapsed_ns"]);
    // Streams stop issuing at 2 s; the phase ends when the last command completes.
    assert!((2_000_000_000..2_001_000_000).contains(&elapsed), "{elapsed}");
    let host = &m["report"]["host"];
    let (reads, writes) = (u(&host["read_commands"]) as f64, u(&host["write_commands"]) as f64);
    assert!((reads / (reads + writes) - 0.7).abs() < 0.01, "rwmixread=70: {reads} / {writes}");
    assert_eq!(
        m["config"]["phases"][0]["workload"]["jobs"].as_array().unwrap().len(),
        4,
        "numjobs=4 streams"
    );
    // Writes stay in the 1 GiB region: at most its pages are valid.
    assert!(u(&m["report"]["valid_pages"]) <= (1 << 30) / 4096);
}

#[test]
fn ramp_then_a_full_random_pass_writes_every_block_once() {
    let m = run_fio(&example("ramp-randwrite.fio"), "ramp-randwrite.fio");
    let phases = m["phases"].as_array().unwrap();
    let names: Vec<_> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["job ramp", "job measure", "job"]);
    let ramp_ns = u(&phases[0]["elapsed_ns"]);
    // Streams stop issuing at 500 ms; the phase ends when their queued writes complete.
    assert!((500_000_000..550_000_000).contains(&ramp_ns), "ramp_time=500ms: {ramp_ns}");
    assert_eq!(u(&phases[2]["device"]["write_bytes"]), CAPACITY, "size=100%");
    assert_eq!(u(&m["report"]["host"]["pages_written"]), CAPACITY / 4096, "the report starts after the ramp");
    // fio's random map: one pass touches every block (uniform draws with repeats would leave
    // about 1/e of them untouched). Pages still in the write buffer are not valid yet.
    let valid = u(&m["report"]["valid_pages"]);
    assert!(valid + BUFFER_PAGES >= CAPACITY / 4096, "{valid}");
}

#[test]
fn trimwrite_leaves_its_region_written_and_norandommap_repeats_blocks() {
    let m = run_fio("[j]\nrw=trimwrite\nbs=64k\nsize=64m\nfsync=1024\n", "tw.fio");
    let host = &m["report"]["host"];
    assert_eq!((u(&host["trim_commands"]), u(&host["write_commands"])), (1024, 1024));
    let valid = u(&m["report"]["valid_pages"]);
    assert!(valid + BUFFER_PAGES >= (64 << 20) / 4096 && valid <= (64 << 20) / 4096, "{valid}");
    let valid_of = |text: &str| u(&run_fio(text, "r.fio")["report"]["valid_pages"]);
    let with_map = valid_of("[j]\nrw=randwrite\nsize=64m\n");
    let without = valid_of("[j]\nrw=randwrite\nsize=64m\nnorandommap\n");
    assert!(with_map + BUFFER_PAGES >= 16384, "{with_map}");
    assert!((without as f64) < 16384.0 * 0.7, "norandommap draws with repeats: {without}");
}

/// The verdict docs/config.md gives a file of fio's examples: "accepted" or the start of
/// the refusal.
fn documented_verdicts() -> Vec<(String, String)> {
    let docs = std::fs::read_to_string(format!("{}/docs/config.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let start = docs.find("<!-- fio-examples:begin -->").expect("docs/config.md has the fio examples table");
    let end = docs.find("<!-- fio-examples:end -->").unwrap();
    docs[start..end]
        .lines()
        .filter_map(|l| {
            let cells: Vec<_> = l.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((name.to_string(), cells.get(2)?.trim_matches('`').to_string()))
        })
        .collect()
}

#[test]
fn fio_examples_are_accepted_or_refused_as_documented() {
    let dir = format!("{}/tests/data/fio-examples", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    let verdicts = documented_verdicts();
    let listed: Vec<_> = verdicts.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(listed, files, "docs/config.md lists every committed example, in order");
    let base = trimlab_jobs::default_config(&[]).unwrap();
    let device = base.resolve().unwrap().device;
    for (name, verdict) in verdicts {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
        let parsed = trimlab_workload::fio::parse_fio_file(&text, &name, &base.workload, Some(CAPACITY));
        let checked = parsed.map_err(|e| e.to_string()).and_then(|f| {
            let streams = f.groups.iter().flat_map(|g| g.streams.iter().chain(&g.ramp));
            streams
                .map(|w| w.validate(CAPACITY, device.geometry.page_bytes as u64, device.max_transfer_bytes))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())
        });
        match checked {
            Ok(_) => assert_eq!(verdict, "accepted", "{name} is accepted"),
            Err(e) => assert!(
                verdict != "accepted" && e.contains(&verdict),
                "{name}: refused with\n  {e}\nbut docs/config.md says\n  {verdict}"
            ),
        }
    }
}

#[test]
fn fios_wait_for_example_runs_its_four_groups_in_order() {
    let dir = format!("{}/tests/data/fio-examples", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(format!("{dir}/waitfor.fio")).unwrap();
    let m = run_fio(&text, "waitfor.fio");
    let phases = m["phases"].as_array().unwrap();
    let names: Vec<_> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["writers", "readers", "writers2", "readers2"], "each wait_for starts a phase");
    for (p, write, read) in [(0, 4 * (128 << 20), 0), (1, 0, 4 * (128 << 20)), (2, 4 * (128 << 20), 0)] {
        // numjobs=4 clones, each moving filesize=128m (runtime=10 s is not reached).
        assert_eq!(u(&phases[p]["device"]["write_bytes"]), write, "{}", names[p]);
        assert_eq!(u(&phases[p]["device"]["read_bytes"]), read, "{}", names[p]);
    }
    for w in phases.windows(2) {
        assert_eq!(w[0]["end_ns"], w[1]["start_ns"], "a group starts when the previous one has ended");
    }
}

#[test]
fn a_configs_precondition_fills_the_whole_region_whatever_ends_the_fio_job() {
    let config = trimlab_jobs::parse_config(
        "[device]\nlogical_bytes = \"256MiB\"\n[workload]\nprecondition = \"fill\"\n",
        "c.toml",
        &[],
    )
    .unwrap();
    let text = "[j]\nrw=trimwrite\nbs=64k\nsize=64m\nio_size=4m\n";
    let fio = FioJob { text, origin: "j.fio" };
    let m = run(config, true, Some(fio), None, None, &mut (), None).unwrap().result.metrics;
    // The fill wrote the 64 MiB region sequentially without TRIMs; the job then moved its
    // io_size: 4 MiB of writes, each after a TRIM of the same block.
    let host = &m["report"]["host"];
    assert_eq!((u(&host["trim_commands"]), u(&host["write_commands"])), (64, 64));
    assert!(u(&m["precondition_end_ns"]) > 0, "the fill ran first");
    let valid = u(&m["report"]["valid_pages"]);
    assert!(valid + BUFFER_PAGES >= (64 << 20) / 4096, "the fill covered the region: {valid}");
}

#[test]
fn a_rate_limit_spaces_the_commands_a_deep_queue_would_bunch() {
    // fio's fixed-rate example: 128 MiB of 4 KiB reads at rate_iops=1000 with iodepth=32 takes
    // 32768 / 1000 s; its poisson twin at 50 IOPS averages the same gaps.
    let dir = format!("{}/tests/data/fio-examples", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(format!("{dir}/fixed-rate-submission.fio")).unwrap();
    let m = run_fio(&text, "fixed-rate-submission.fio");
    let secs = u(&m["report"]["sim_time_ns"]) as f64 / 1e9;
    assert!((secs - 32.767).abs() < 0.01, "{secs} s");
    let unpaced = run_fio(&text.replace("rate_iops=1000", ""), "unpaced.fio");
    assert!(u(&unpaced["report"]["sim_time_ns"]) < 1_000_000_000, "without the rate the queue runs flat out");
    let text = text.replace("rw=read", "rw=randwrite").replace("size=128m", "size=8m");
    let paced = run_fio(&(text.clone() + "rate_process=poisson\n"), "poisson.fio");
    let secs = u(&paced["report"]["sim_time_ns"]) as f64 / 1e9;
    assert!((secs / 2.048 - 1.0).abs() < 0.1, "2048 writes at 1000/s with exponential gaps: {secs} s");
}
