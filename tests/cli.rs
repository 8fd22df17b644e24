//! End-to-end tests of the `trimlab` binary: determinism of `run` and `reproduce`, and clear
//! errors for bad input.

mod common;

use common::*;
use std::path::Path;

#[test]
fn same_config_and_seed_give_byte_identical_metrics() {
    let (a, b, c) = (scratch("det-a"), scratch("det-b"), scratch("det-c"));
    for (dir, seed) in [(&a, "7"), (&b, "7"), (&c, "8")] {
        let o = trimlab(&["run", "examples/quick.toml", "--seed", seed, "--out", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let read = |d: &Path| std::fs::read(d.join("metrics.json")).unwrap();
    assert_eq!(read(&a), read(&b), "same seed must give identical metrics.json");
    assert_ne!(read(&a), read(&c), "a different seed must change the run");
    let csv = std::fs::read_to_string(a.join("metrics.csv")).unwrap();
    assert!(csv.starts_with("key,value\n") && csv.contains("report.waf,"), "{csv}");
}

#[test]
fn reproduce_waf_is_deterministic_and_writes_every_artifact() {
    let (a, b) = (scratch("waf-a"), scratch("waf-b"));
    for dir in [&a, &b] {
        let o = trimlab(&["reproduce", "waf", "--scale", "0.03", "--out", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    for file in [
        "waf/waf.csv",
        "waf/waf.json",
        "waf/waf_no_trim.svg",
        "waf/waf_trim.svg",
        "waf/report.json",
        "index.html",
    ] {
        let x = std::fs::read(a.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let y = std::fs::read(b.join(file)).unwrap();
        assert_eq!(x, y, "{file} differs between identical runs");
    }
}

/// Golden shape of `delayed-trim` at a small scale: every check of 002's orderings holds in
/// shape, two runs are byte-identical, and `--strict` exits 1 exactly when a claim (here the
/// WAF band) fails.
#[test]
fn reproduce_delayed_trim_keeps_the_papers_orderings() {
    let (a, b) = (scratch("dt-a"), scratch("dt-b"));
    let o = trimlab(&["reproduce", "delayed-trim", "--scale", "0.03", "--out", a.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("delayed-trim/report.json")).unwrap()).unwrap();
    let verdicts = report["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 7);
    let mut failed = 0;
    for v in verdicts {
        let claim = v["claim"].as_str().unwrap();
        let detail = v["detail"].as_str().unwrap();
        if claim.starts_with("[band") {
            assert!(detail.starts_with("in shape"), "{claim}: {detail}");
        } else {
            assert_eq!(v["holds"], true, "{claim}: {detail}");
        }
        failed += usize::from(v["holds"] != true);
    }
    let o =
        trimlab(&["reproduce", "delayed-trim", "--scale", "0.03", "--strict", "--out", b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(if failed > 0 { 1 } else { 0 }), "{}", stderr(&o));
    assert_eq!(stderr(&o).contains("--strict"), failed > 0, "{}", stderr(&o));
    for file in ["delayed-trim/report.json", "delayed-trim/fig4_trim_overhead.svg", "index.html"] {
        assert_eq!(std::fs::read(a.join(file)).unwrap(), std::fs::read(b.join(file)).unwrap(), "{file}");
    }
}

#[test]
fn delayed_engine_config_errors_name_the_key() {
    let dir = scratch("bad-delayed");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[trim]\nengine = \"delayed\"\n[trim.delayed]\nbefore_gc = \"lots\"\n").unwrap();
    let o = trimlab(&["run", path.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("before_gc") && stderr(&o).contains("512MiB"), "{}", stderr(&o));
    std::fs::write(&path, "[trim]\nengine = \"delayed\"\n[trim.delayed]\ntrim_buffer_entries = 3\n").unwrap();
    let o = trimlab(&["run", path.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("trim.delayed.trim_buffer_entries = 3"), "{}", stderr(&o));
}

#[test]
fn missing_config_file_is_a_clear_error() {
    let o = trimlab(&["run", "no/such/config.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no/such/config.toml: cannot read it"), "{}", stderr(&o));
}

/// A workload file where the TOML config goes (`trimlab run job.fio`) is still refused with
/// the TOML error, and the error says which flag takes it. A TOML file that fails to parse
/// gets no such hint.
#[test]
fn a_workload_file_given_as_the_config_names_its_flag() {
    let dir = scratch("workload-as-config");
    std::fs::create_dir_all(&dir).unwrap();
    let strace = dir.join("program.log");
    std::fs::write(&strace, "4242 1700000000.000001 openat(AT_FDCWD, \"/x\", O_RDONLY) = 3\n").unwrap();
    let bad_toml = dir.join("bad.toml");
    std::fs::write(&bad_toml, "[device]\npreset = nvme-tlc\n").unwrap();
    for (file, flag) in [
        ("examples/fio/randrw-4jobs.fio", Some("--fio")),
        ("examples/filebench/varmail.f", Some("--filebench")),
        (strace.to_str().unwrap(), Some("--strace")),
        (bad_toml.to_str().unwrap(), None),
    ] {
        let o = trimlab(&["run", file, "--out", dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{file}");
        let err = stderr(&o);
        assert!(err.contains("TOML parse error"), "{file}: {err}");
        match flag {
            Some(flag) => assert!(err.contains(&format!("trimlab run {flag} {file}")), "{file}: {err}"),
            None => assert!(!err.contains("looks like a workload file"), "{file}: {err}"),
        }
    }
}

#[test]
fn config_errors_name_the_file_line_and_key() {
    let dir = scratch("bad-config");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[device]\npreset = \"nvme-tlc\"\nspare_factor = 1.5\n").unwrap();
    let o = trimlab(&["run", path.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("device.spare_factor = 1.5"), "{}", stderr(&o));
    std::fs::write(&path, "[workload]\nqueue_deep = 4\n").unwrap();
    let o = trimlab(&["run", path.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert!(stderr(&o).contains("line 2") && stderr(&o).contains("queue_deep"), "{}", stderr(&o));
}

#[test]
fn unknown_experiment_lists_the_known_ones() {
    let o = trimlab(&["reproduce", "nonsense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown experiment \"nonsense\"") && stderr(&o).contains("waf"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_scale_flag_is_refused() {
    let o = trimlab(&["reproduce", "waf", "--scale", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--scale 0"), "{}", stderr(&o));
    let o = trimlab(&["run", "examples/quick.toml", "--seed", "minus-one"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--seed"), "{}", stderr(&o));
}

#[test]
fn help_lists_experiments_engines_and_presets() {
    let o = trimlab(&["--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for word in [
        "waf",
        "delayed-trim",
        "delayed",
        "immediate",
        "none",
        "nvme-tlc",
        "k9lag08u0m-4ch",
        "reproduce",
        "bench",
        "ftl-trim",
    ] {
        assert!(text.contains(word), "--help lacks {word}:\n{text}");
    }
}

/// `--set` overrides a key exactly as the file would, `-` reads the config from stdin, and
/// `--json` prints the metrics as one object.
#[test]
fn set_overrides_stdin_config_and_json_summary() {
    use std::io::Write;
    let (file_dir, stdin_dir) = (scratch("set-file"), scratch("set-stdin"));
    let by_file = trimlab(&[
        "run",
        "examples/quick.toml",
        "--set",
        "device.spare_factor=0.2",
        "--set",
        "trim.engine=none",
        "--json",
        "--out",
        file_dir.to_str().unwrap(),
    ]);
    assert!(by_file.status.success(), "{}", stderr(&by_file));
    let metrics: serde_json::Value =
        serde_json::from_slice(&by_file.stdout).expect("one JSON object on stdout");
    let spare = metrics["config"]["device"]["spare_factor"].as_f64().unwrap();
    assert!((spare - 0.2).abs() < 1e-9, "{spare}");
    assert_eq!(metrics["report"]["trim"]["engine"], "none");

    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quick.toml")).unwrap();
    let text = text.replace("spare_factor = 0.12", "spare_factor = 0.2").replace("\"immediate\"", "\"none\"");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["run", "-", "--json", "--out", stdin_dir.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let by_stdin = child.wait_with_output().unwrap();
    assert!(by_stdin.status.success(), "{}", stderr(&by_stdin));
    assert_eq!(by_file.stdout, by_stdin.stdout, "--set and the same edit in the file must give the same run");
}

#[test]
fn bad_set_names_the_key_and_what_is_accepted() {
    let o =
        trimlab(&["run", "examples/quick.toml", "--set", "trim.engine=sometimes", "--out", "target/never"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("engine") && e.contains("immediate"), "{e}");
    let o =
        trimlab(&["run", "examples/quick.toml", "--set", "device.spare_factr=0.1", "--out", "target/never"]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("spare_factr") && e.contains("--set"), "{e}");
    let o = trimlab(&["run", "examples/quick.toml", "--set", "nothing", "--out", "target/never"]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("KEY.PATH=VALUE"), "{e}");
}

/// Each example scenario, run with `trimlab run`, gives the numbers of the reproduce point it
/// names: the same phases (spans, device traffic, figures; the names may differ), device report
/// and host counters.
#[test]
fn example_scenarios_equal_their_reproduce_points() {
    let cases = [
        ("lazy-trim-append", "lazy-trim", "micro-lazy-64k"),
        ("postmark-selective", "selective-trim", "fig1b-selective-40-90"),
        ("thin-bulk-rm", "discard-vs-fstrim", "thin-discard"),
        ("hybrid-os-install", "ftl-trim", "os-install-hybrid-TRIM"),
    ];
    let options = trimlab_experiments::Options::new(1, 1.0);
    let experiments = trimlab_experiments::select(&[]).unwrap();
    for (example, experiment, point) in cases {
        let out = scratch(&format!("example-{example}"));
        let path = format!("examples/scenarios/{example}.toml");
        let o = trimlab(&["run", &path, "--json", "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{example}: {}", stderr(&o));
        let mut by_cli: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let configs = experiments.iter().find(|e| e.name == experiment).map(|e| e.configs).unwrap();
        let points = configs(&options);
        let (_, config) =
            points.iter().find(|(name, _)| name == point).unwrap_or_else(|| panic!("no point {point}"));
        let mut by_experiment = trimlab_scenario::run(config, None, &mut ()).unwrap().metrics;
        // The examples name their phases; the points leave the default names.
        for m in [&mut by_cli, &mut by_experiment] {
            for p in m["phases"].as_array_mut().into_iter().flatten() {
                p.as_object_mut().map(|p| p.remove("name"));
            }
        }
        for key in ["phases", "report", "host", "thin", "cluster_host"] {
            assert_eq!(
                by_cli.get(key),
                by_experiment.get(key),
                "{example} vs {experiment}/{point}: {key} differs"
            );
        }
        let measured = by_cli["phases"].as_array().is_some_and(|p| !p.is_empty())
            || by_cli["cluster_host"]["phases"].as_array().is_some_and(|p| !p.is_empty());
        assert!(measured, "{example}: no phases in {by_cli}");
    }
}

/// Bad host and phase input is refused with the key and what is accepted, never a panic.
#[test]
fn host_and_phase_errors_name_the_key() {
    let cases: [(&[&str], &[&str]); 4] = [
        (&["host.discard=lazy"], &["host.discard", "host.fs = \"ext4\""]),
        (&["workload.kind=postmark"], &["workload.kind = \"postmark\"", "host.fs = \"ext4\""]),
        (&["workload.kind=tpcc"], &["unknown workload kind", "append-holes", "file-churn"]),
        (&["host.fs=ext4", "workload.kind=aging", "workload.files=3"], &["workload.files", "utilization"]),
    ];
    for (set, wanted) in cases {
        let mut args = vec!["run", "examples/quick.toml", "--out", "target/never"];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = trimlab(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{set:?}: {e}");
        for w in wanted {
            assert!(e.contains(w), "{set:?}: {w:?} not in {e}");
        }
    }
}

/// `--emit-configs` writes the configuration of every point an experiment runs, and `trimlab
/// run` on one of them gives the experiment's own number for that point.
#[test]
fn emitted_waf_configs_run_to_the_experiments_numbers() {
    let (configs, report) = (scratch("emit-configs"), scratch("emit-report"));
    let o = trimlab(&["reproduce", "waf", "--scale", "0.03", "--emit-configs", configs.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let count = std::fs::read_dir(configs.join("waf")).unwrap().count();
    assert_eq!(count, 56, "one config per waf point");
    let o = trimlab(&["reproduce", "waf", "--scale", "0.03", "--out", report.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(report.join("waf/waf.csv")).unwrap();
    for (sf, ppb, trim) in [("0.1", "64", "0.1"), ("0.3", "256", "0")] {
        let point = configs.join(format!("waf/sf{sf}-ppb{ppb}-trim{trim}.toml"));
        let out = scratch(&format!("emit-run-{sf}-{ppb}-{trim}"));
        let o = trimlab(&["run", point.to_str().unwrap(), "--json", "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let metrics: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let row = csv
            .lines()
            .find(|l| l.starts_with(&format!("{trim},{ppb},")) && l.split(',').nth(3) == Some(sf))
            .unwrap_or_else(|| panic!("no row {trim},{ppb},_,{sf} in\n{csv}"));
        let waf_in_report: f64 = row.split(',').nth(6).unwrap().parse().unwrap();
        let waf_of_run = metrics["report"]["waf"].as_f64().unwrap();
        assert!(
            (waf_of_run - waf_in_report).abs() < 5e-5,
            "{point:?}: run {waf_of_run}, report {waf_in_report}"
        );
    }
}

/// delayed-trim's points are `[[phase]]` configs: 57 of them, and `trimlab run` of one gives
/// the experiment's WAF, foreground TRIM time and pages pending before each iteration's writes.
#[test]
fn emitted_delayed_trim_configs_run_to_the_experiments_numbers() {
    let (configs, report) = (scratch("emit-dt-configs"), scratch("emit-dt-report"));
    let scale = ["--scale", "0.03"];
    let o = trimlab(
        &[&["reproduce", "delayed-trim", "--emit-configs", configs.to_str().unwrap()][..], &scale].concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(configs.join("delayed-trim")).unwrap().count(), 57, "one config per point");
    let o =
        trimlab(&[&["reproduce", "delayed-trim", "--out", report.to_str().unwrap()][..], &scale].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let fig4 = std::fs::read_to_string(report.join("delayed-trim/fig4_trim_overhead.csv")).unwrap();
    let waf = std::fs::read_to_string(report.join("delayed-trim/fig2_waf.csv")).unwrap();
    let row = |csv: &str| -> Vec<String> {
        let line =
            csv.lines().find(|l| l.starts_with("DT-ALL,")).unwrap_or_else(|| panic!("no DT-ALL in\n{csv}"));
        line.split(',').map(str::to_string).collect()
    };
    let point = configs.join("delayed-trim/scale0.03-gap20ms-dt-all.toml");
    let out = scratch("emit-dt-run");
    let o = trimlab(&["run", point.to_str().unwrap(), "--json", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let metrics: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let waf_of_run = metrics["report"]["waf"].as_f64().unwrap();
    let waf_in_report: f64 = row(&waf)[1].parse().unwrap();
    assert!((waf_of_run - waf_in_report).abs() < 5e-5, "run {waf_of_run}, report {waf_in_report}");
    let fg_ms = metrics["report"]["trim"]["foreground_total_ns"].as_f64().unwrap() / 1e6;
    let fg_in_report: f64 = row(&fig4)[6].parse().unwrap();
    assert!(
        (fg_ms - fg_in_report).abs() < 1e-3 * fg_in_report.max(1.0),
        "run {fg_ms} ms, report {fg_in_report} ms"
    );
    let pending: Vec<String> = metrics["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "gap before writes")
        .map(|p| p["trim_pending_pages"].to_string())
        .collect();
    assert_eq!(pending.join(" / "), row(&fig4)[10]);
}

/// `--emit-configs` writes every point of the three host experiments, and each file reads back
/// as a config that resolves.
#[test]
fn host_experiments_emit_their_configs() {
    let dir = scratch("emit-host-configs");
    let o = trimlab(&[
        "reproduce",
        "lazy-trim",
        "selective-trim",
        "discard-vs-fstrim",
        "--emit-configs",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // lazy-trim: 24 micro + 3 Table II points, and the TRIM-cost sweep of 7 costs x (12 micro + 3
    // Table II); selective-trim: 16 Fig. 1a + 8 Fig. 1b points and the sweep of 7 x 8 Fig. 1b;
    // discard-vs-fstrim: 2 thin + 4 wear points and the 4 wear points without idle-time GC.
    for (experiment, points) in [("lazy-trim", 132), ("selective-trim", 80), ("discard-vs-fstrim", 10)] {
        let files: Vec<_> =
            std::fs::read_dir(dir.join(experiment)).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), points, "{experiment}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let config = trimlab_scenario::RunConfig::parse(&text, &f.display().to_string()).unwrap();
            config.resolve().unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        }
    }
}

/// Issue 43 item 5: a device built from a real drive's nvme-cli JSON (tests/data/nvme) is
/// described key by key, runs, and a bad report is refused naming the file and the field.
#[test]
fn a_device_from_the_drives_reports_is_described_and_runs() {
    let ctrl = "tests/data/nvme/wdc-sn730-id-ctrl.json";
    let out = trimlab(&[
        "presets",
        "--from",
        ctrl,
        "--smart",
        "tests/data/nvme/samsung-970-evo-plus-250gb-smartctl.json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.starts_with("device from WDC PC SN730 SDBQNTY-256G-1001"), "{text}");
    assert!(
        text.contains("  max_transfer_bytes = 524288  <- tests/data/nvme/wdc-sn730-id-ctrl.json: mdts = 7"),
        "{text}"
    );
    assert!(text.contains("  daily_host_bytes = "), "{text}");
    assert!(
        text.contains("assumed: preset nvme-tlc's") && text.contains("\n  program_ns = 500000\n"),
        "{text}"
    );
    assert!(
        !text.contains("\n  max_transfer_bytes = \"2MiB\""),
        "a mapped key is not listed as assumed: {text}"
    );
    // `run` with `[device] from`, the files named relative to the config; the config's own
    // keys win (a 512 MiB slice of the drive keeps the run small).
    let dir = scratch("device-from");
    std::fs::copy(ctrl, dir.join("ctrl.json")).unwrap();
    let config = dir.join("drive.toml");
    std::fs::write(
        &config,
        "seed = 1\n[device]\nfrom = \"ctrl.json\"\nlogical_bytes = \"512MiB\"\n[workload]\npattern = \"uniform-random\"\nprecondition = \"none\"\ntrim_fraction = 0.1\nwrites = \"0.5x\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = trimlab(&["run", config.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        said.contains("device from WDC PC SN730 SDBQNTY-256G-1001")
            && said.contains("1 mapped (max_transfer_bytes)"),
        "{said}"
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["config"]["device"]["max_transfer_bytes"], 524288, "{}", metrics["config"]["device"]);
    // Bad input: not JSON, another command's output, a field of the wrong type.
    std::fs::write(dir.join("bad.json"), "{\"mdts\": \"seven\"}").unwrap();
    let bad = dir.join("bad.json");
    let out = trimlab(&["presets", "--from", bad.to_str().unwrap()]);
    let e = stderr(&out);
    assert!(
        !out.status.success() && e.contains("bad.json") && e.contains("field \"mdts\" = \"seven\""),
        "{e}"
    );
    let out = trimlab(&["presets", "--from", "tests/data/nvme/nvme-cli-2173-7.68tb-id-ns.json"]);
    assert!(stderr(&out).contains("give it as device.from_ns"), "{}", stderr(&out));
}
