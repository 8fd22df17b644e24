//! fio job files as fio runs them (issue 23, item 1): the three ordinary files of the issue
//! run with fio's meaning, and every block-I/O job file of fio's own examples/ is accepted or
//! refused with the reason docs/config.md gives for it. Issue 43: the results come out as fio
//! reports them (normal, terse, JSON), readable by a tool built on fio's JSON.

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

/// `run --fio`'s fio-format report of `text`.
fn fio_report(text: &str, origin: &str) -> trimlab_jobs::fio_output::FioReport {
    let config = trimlab_jobs::default_config(&[]).unwrap();
    let fio = FioJob { text, origin };
    run(config, false, Some(fio), None, None, &mut (), None).unwrap().fio.expect("a fio run has a fio report")
}

/// What fio-plot (github.com/louwrentius/fio-plot, fio_plot/fiolib/jsonparsing_support.py
/// get_json_mapping) and CI dashboards read of fio's JSON, as fio 3.33 nests and names it.
#[test]
fn the_json_output_parses_as_fios() {
    use trimlab_jobs::fio_output::OutputFormat;
    let report = fio_report(&example("randrw-4jobs.fio"), "randrw-4jobs.fio");
    let text = OutputFormat::Json.render(&report);
    let j: Value = serde_json::from_str(&text).expect("fio's JSON parses");
    assert_eq!(j["fio version"], "fio-3.33");
    assert_eq!(j["global options"]["ioengine"], "libaio");
    let jobs = j["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "group_reporting: one entry per group");
    let job = &jobs[0];
    assert_eq!(
        (job["jobname"].as_str(), job["groupid"].as_u64(), job["error"].as_u64()),
        (Some("randrw"), Some(0), Some(0))
    );
    for key in ["rw", "bs", "iodepth", "numjobs"] {
        assert!(job["job options"][key].is_string(), "job options.{key}: {}", job["job options"]);
    }
    for key in ["usr_cpu", "sys_cpu", "latency_ns", "latency_us", "latency_ms", "job_runtime", "sync"] {
        assert!(job.get(key).is_some(), "{key}");
    }
    let (read, write, trim) = (&job["read"], &job["write"], &job["trim"]);
    for dir in [read, write, trim] {
        for key in
            ["io_bytes", "io_kbytes", "bw_bytes", "bw", "runtime", "total_ios", "iops_stddev", "bw_min"]
        {
            assert!(dir[key].is_number(), "{key}: {dir}");
        }
        for lat in ["slat_ns", "clat_ns", "lat_ns"] {
            for key in ["min", "max", "mean", "stddev", "N"] {
                assert!(dir[lat][key].is_number(), "{lat}.{key}: {dir}");
            }
        }
    }
    // The figures against the run's own counters.
    let m = run_fio(&example("randrw-4jobs.fio"), "randrw-4jobs.fio");
    let host = &m["report"]["host"];
    assert_eq!(read["total_ios"], host["read_commands"]);
    assert_eq!(write["total_ios"], host["write_commands"]);
    assert_eq!(u(&read["io_bytes"]), u(&host["read_commands"]) * 4096, "bs=4k");
    assert_eq!(u(&read["runtime"]), 2000, "runtime=2s of simulated time");
    let iops = read["iops"].as_f64().unwrap();
    assert!((iops - u(&read["total_ios"]) as f64 / 2.0).abs() < 1.0, "{iops}");
    assert_eq!(u(&read["bw"]), u(&read["bw_bytes"]) / 1024, "bw is KiB/s");
    let p = &read["clat_ns"]["percentile"];
    assert_eq!(p.as_object().unwrap().len(), 17, "fio's default percentile list");
    let p99 = u(&p["99.000000"]) as f64;
    let report_p99 = u(&m["report"]["latency"]["read"]["p99_ns"]) as f64;
    assert!((p99 / report_p99 - 1.0).abs() < 0.01, "the group is the whole run here: {p99} vs {report_p99}");
    assert_eq!(read["clat_ns"]["mean"], read["lat_ns"]["mean"], "no submission cost: lat = clat");
    assert_eq!(u(&read["slat_ns"]["N"]), 0, "slat empty, as for a synchronous engine");
    assert!(trim["clat_ns"].get("percentile").is_none() && u(&trim["total_ios"]) == 0);
    assert_eq!(j["disk_util"][0]["read_ios"], host["read_commands"]);
    let plus: Value = serde_json::from_str(&OutputFormat::JsonPlus.render(&report)).unwrap();
    let bins = plus["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap();
    assert_eq!(bins.values().map(u).sum::<u64>(), u(&read["total_ios"]), "json+ bins count every read");
}

#[test]
fn the_normal_output_has_a_block_per_group_and_says_a_constant_cost() {
    let report = fio_report(&example("fill-then-trim.fio"), "fill-then-trim.fio");
    let text = trimlab_jobs::fio_output::normal(&report);
    let fill = text.find("fill: (groupid=0, jobs=1): err= 0:").expect(&text);
    let trim = text.find("trim-it: (groupid=1, jobs=1): err= 0:").expect(&text);
    assert!(fill < trim, "{text}");
    assert!(text[fill..trim].contains("  write: IOPS="), "{text}");
    assert!(
        text[trim..].contains("  trim: IOPS=") && text[trim..].contains("(4096MiB/"),
        "bs=1m TRIMs of half the drive: {text}"
    );
    assert!(text.contains("\nRun status group 0 (all jobs):\n  WRITE: bw="), "{text}");
    assert!(text.contains("\nRun status group 1 (all jobs):\n   TRIM: bw="), "{text}");
    // 16384 TRIMs of 64 KiB that all cost the device the same: a word, not a percentile list.
    let report = fio_report("[t]\nrw=randtrim\nbs=64k\nsize=1g\n", "t.fio");
    let text = trimlab_jobs::fio_output::normal(&report);
    assert!(text.contains("    clat percentiles (usec): all ["), "{text}");
    assert!(text.contains("commands took this same time in the model), not a distribution"), "{text}");
    assert!(!text.contains("th=["), "{text}");
    let terse = trimlab_jobs::fio_output::terse(&report);
    assert_eq!(terse.trim_end().split(';').count(), 121, "{terse}");
}

#[test]
fn run_prints_fios_json_alone_on_stdout() {
    let dir = std::env::temp_dir().join(format!("trimlab-fio-json-{}", std::process::id()));
    let job = format!("{}/examples/fio/randrw-4jobs.fio", env!("CARGO_MANIFEST_DIR"));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["run", "--fio", &job, "--output-format=json", "--out", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).expect("stdout is fio's JSON alone");
    assert_eq!(j["jobs"][0]["jobname"], "randrw");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.matches("ioengine ignored").count(), 1, "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
