//! Unit tests of the fio job-file import: options, groups, clones, ends and errors.

use super::*;
use crate::config::{AccessPattern, BlockShare, RateProcess};
use trimlab_sim::ByteSize;

const GIB: u64 = 1 << 30;

fn import(text: &str) -> Result<FioJob, FioError> {
    parse_fio_job(text, "job.fio", &WorkloadConfig::default())
}

fn file(text: &str) -> Result<FioFile, FioError> {
    parse_fio_file(text, "job.fio", &WorkloadConfig::default(), Some(8 * GIB))
}

#[test]
fn a_random_write_job_maps_every_option() {
    let job = import(
        "; steady random writes\n[global]\nioengine=libaio\ndirect=1\nbs=16k\n\n[rand]\nrw=randwrite\nsize=1g\niodepth=8\nthinktime=50\nrandom_distribution=zipf:1.2\n",
    )
    .unwrap();
    let w = &job.workload;
    assert_eq!(job.name, "rand");
    assert_eq!((w.pattern, w.zipf_theta, w.random_map), (AccessPattern::Zipf, 1.2, None));
    assert_eq!(w.block_bytes, ByteSize(16 << 10));
    assert_eq!(w.region_bytes, Some(ByteSize(GIB)));
    assert_eq!(w.io_bytes, Some(ByteSize(GIB)), "fio moves size bytes");
    assert_eq!(w.queue_depth, 8);
    assert_eq!(w.think_time, DurationNs(50_000), "bare thinktime is microseconds in fio");
    assert_eq!(job.ignored, ["job.fio:3: ioengine", "job.fio:4: direct"]);
}

#[test]
fn modes_mixes_and_distributions() {
    let w = import("[j]\nrw=randrw\nrwmixread=70\nsize=64m\n").unwrap().workload;
    assert_eq!((w.pattern, w.read_fraction, w.random_map), (AccessPattern::UniformRandom, 0.7, Some(true)));
    let w = import("[j]\nrw=randrw\nnorandommap\nsize=64m\n").unwrap().workload;
    assert_eq!(w.random_map, None);
    let w = import("[j]\nrw=randtrim\nbs=64k\nsize=64m\n").unwrap().workload;
    assert_eq!((w.trim_fraction, w.io_bytes), (1.0, Some(ByteSize(64 << 20))));
    let w = import("[j]\nrw=trimwrite\nsize=1m\n").unwrap().workload;
    assert_eq!((w.pattern, w.trim_then_write, w.trim_fraction), (AccessPattern::Sequential, Some(true), 0.0));
    let w = import("[j]\nrw=randwrite\nrwmixwrite=20\nsize=1m\n").unwrap().workload;
    assert_eq!(w.read_fraction, 0.0, "rwmix only applies to mixed modes");
    let w = import("[j]\nrw=randread\nsize=1m\nrandom_distribution=pareto:0.9\n").unwrap().workload;
    assert_eq!((w.pattern, w.pareto_h), (AccessPattern::Pareto, Some(0.9)));
    let w = import("[j]\nrw=randread\nsize=1m\nrandom_distribution=normal:10\n").unwrap().workload;
    assert_eq!((w.pattern, w.normal_deviation_percent), (AccessPattern::Normal, Some(10.0)));
    let w = import("[j]\nrw=randwrite\nsize=1m\nbssplit=4k/50:1k/:32k/\n").unwrap().workload;
    let split: Vec<_> = w.block_split.unwrap().iter().map(|s| (s.bytes.0, s.percent)).collect();
    assert_eq!(split, [(4096, 50), (1024, 25), (32768, 25)]);
}

#[test]
fn sizes_in_percent_runtime_and_loops() {
    let f = file("[j]\nrw=write\nbs=4k\nsize=100%\noffset=25%\n").unwrap();
    let w = &f.groups[0].streams[0];
    assert_eq!(
        (w.region_offset.0, w.region_bytes),
        (2 * GIB, Some(ByteSize(6 * GIB))),
        "capped after the offset"
    );
    let f = file("[j]\nrw=randwrite\nsize=1g\nruntime=30\ntime_based\n").unwrap();
    let w = &f.groups[0].streams[0];
    assert_eq!(
        (w.runtime, w.io_bytes),
        (Some(DurationNs(30_000_000_000)), None),
        "time_based loops until runtime"
    );
    let f = file("[j]\nrw=write\nsize=1g\nloops=3\nruntime=1m\n").unwrap();
    let w = &f.groups[0].streams[0];
    assert_eq!((w.runtime, w.io_bytes), (Some(DurationNs(60_000_000_000)), Some(ByteSize(3 * GIB))));
    let f = file("[j]\nrw=write\nfilesize=128m\nsize=1g\n").unwrap();
    let w = &f.groups[0].streams[0];
    assert_eq!(
        (w.region_bytes, w.io_bytes),
        (Some(ByteSize(128 << 20)), Some(ByteSize(GIB))),
        "filesize is the region"
    );
    let f = file("[j]\nrw=read\n").unwrap();
    assert_eq!(f.groups[0].streams[0].io_bytes, Some(ByteSize(8 * GIB)), "no size: the whole device");
}

#[test]
fn jobs_group_at_stonewalls_and_clone_with_numjobs() {
    let text = "[global]\nbs=4k\nsize=64m\n[fill]\nrw=write\n[a]\nstonewall\nrw=randwrite\nnumjobs=3\noffset_increment=64m\nrandseed=7\n[b]\nrw=randread\n[c]\nwait_for=a\nrw=trim\nramp_time=2\n";
    let f = file(text).unwrap();
    let names: Vec<_> = f.groups.iter().map(|g| g.names.join("+")).collect();
    assert_eq!(names, ["fill", "a+b", "c"]);
    let g = &f.groups[1];
    assert_eq!(g.streams.len(), 4, "three clones of a and b");
    let offsets: Vec<_> = g.streams.iter().map(|w| w.region_offset.0).collect();
    assert_eq!(offsets, [0, 64 << 20, 128 << 20, 0]);
    let seeds: Vec<_> = g.streams.iter().map(|w| w.stream_seed).collect();
    assert_eq!(seeds, [Some(14), Some(21), Some(28), None], "randseed times fio's thread number");
    assert_eq!(f.notes.len(), 1, "wait_for inside a group of two is noted: {:?}", f.notes);
    let ramp = &f.groups[2].ramp;
    assert_eq!((ramp.len(), ramp[0].runtime, ramp[0].io_bytes), (1, Some(DurationNs(2_000_000_000)), None));
    let e = import(text).unwrap_err();
    assert!(e.message.contains("several jobs"), "{e}");
}

#[test]
fn an_unsupported_option_is_named_with_file_and_line() {
    let e = import("[global]\nbs=4k\n[j]\nrw=randwrite\nverify=crc32c\n").unwrap_err();
    assert_eq!((e.origin.as_str(), e.line), ("job.fio", 5));
    assert!(e.to_string().starts_with("job.fio:5: fio option `verify` is not supported by trimlab: "), "{e}");
    let e = import("[j]\nrw=write\nsize=1m\nstartdelay=5\n").unwrap_err();
    assert!(e.message.contains("[[phase]]") && e.message.contains("idle"), "{e}");
    let w = import("[j]\nrw=randrw\nsize=1m\nrate_iops=500,,20\nrate_process=poisson\n").unwrap().workload;
    assert_eq!((w.rate_iops, w.rate_process), (Some(vec![500.0, 0.0, 20.0]), Some(RateProcess::Poisson)));
    let w = import("[j]\nrw=write\nsize=1m\nrate=1m\nrate_min=1k\n").unwrap().workload;
    assert_eq!(w.rate_bytes, Some(vec![ByteSize(1 << 20)]));
    let e = import("[j]\nrw=write\nsize=1m\nhugepage-size=2m\n").unwrap_err();
    assert!(e.message.contains("random_distribution") && e.message.contains("ignored:"), "{e}");
}

#[test]
fn bad_values_and_shapes_are_errors() {
    let bad = |text: &str, needle: &str, line: usize| {
        let e = file(text).unwrap_err();
        assert!(e.line == line && e.message.contains(needle), "{needle}: {e}");
    };
    bad("[j]\nrw=randappend\n", "trimwrite", 2);
    bad("[j]\nbs=4k,8k\n", "4k,8k", 2);
    bad("[j]\nrw=write\nbs=0\n", "`bs=0`: a block size must be a positive multiple of 512", 3);
    bad("[j]\nblocksize=1000\n", "multiple of 512 bytes", 2);
    bad("[j]\nbsrange=0-0\n", "multiple of 512 bytes", 2);
    bad("[j]\nnumjobs=0\n", "1..=1024", 2);
    bad("[j]\nrandom_distribution=zoned:60/10:30/90\n", "add up to 100", 2);
    bad("[j]\nrandom_distribution=zoned_abs:50/:50/1g\n", "needs a size", 2);
    bad("[j]\nrandom_distribution=zoned:50/5:50/95,100/100\n", "per-direction", 2);
    bad("[j]\nrandom_distribution=sequence\n", "sequence", 2);
    bad("[j]\nrw=randread:0\n", ">= 1", 2);
    bad("[j]\nrw=write:lots\n", "size skipped", 2);
    bad("[j]\nrandom_distribution=zipf:1.2:0.25\n", "center", 2);
    bad("[j]\nbssplit=4k/60:8k/60\n", "add up to 100", 2);
    bad("[j]\nsize=150%\n", "1..=100", 2);
    bad("[j]\nfilesize=1m-2m\n", "several files", 2);
    bad("[j]\nruntime=10\ntime_based=maybe\n", "0 or 1", 3);
    bad("[a]\nrw=write\n[b]\nwait_for=c\n", "wait_for=c", 3);
    bad("[j]\nrw=write\ntime_based\n", "needs runtime", 1);
    bad("[global]\nbs=4k\n", "no job section", 2);
    bad("[j]\nsize=$mb_memory\n", "$variables", 2);
    let e = parse_fio_job("[j]\nsize=50%\n", "job.fio", &WorkloadConfig::default()).unwrap_err();
    assert!(e.message.contains("capacity"), "{e}");
    let e = import("[j]\nrw=randread\n").unwrap_err();
    assert!(e.message.contains("size, io_size, number_ios or runtime"), "{e}");
}

#[test]
fn a_later_global_applies_to_the_jobs_after_it() {
    let f =
        file("[global]\nbs=8k\n[a]\nrw=write\nsize=1m\n[global]\nbs=16k\n[b]\nrw=write\nsize=1m\n").unwrap();
    let sizes: Vec<_> = f.groups[0].streams.iter().map(|w| w.block_bytes.0).collect();
    assert_eq!(sizes, [8192, 16384]);
    let _ = BlockShare { bytes: ByteSize(4096), percent: 100 };
}

#[test]
fn job_counts_and_offsets_are_bounded_before_anything_is_built() {
    // 8 jobs of numjobs=1024 would be 8192 streams: refused at the fifth, before its clones.
    let many = "[j]\nrw=write\nsize=1m\nnumjobs=1024\n".repeat(8);
    let e = file(&many).unwrap_err();
    assert_eq!(e.line, 17, "{e}");
    assert!(e.message.contains("more than 4096 jobs in the file, counting clones"), "{e}");
    // 10^5 stonewalled sections: refused at the 4097th, as fio would.
    let sections = "[s]\nrw=write\nsize=4k\nstonewall\n".repeat(100_000);
    let e = file(&sections).unwrap_err();
    assert_eq!((e.line, e.message.contains("more than 4096 jobs")), (4096 * 4 + 1, true), "{e}");
    // A [global] of many lines is copied into each job: the held lines are capped.
    let global = format!("[global]\n{}", "bs=4k\n".repeat(300_000));
    let e = file(&format!("{global}{}", "[j]\nrw=write\n".repeat(5))).unwrap_err();
    assert!(e.message.contains("option lines over all jobs"), "{e}");
    // An offset near 2^64 is refused, not wrapped to 0.
    let e = file("[j]\nrw=write\nsize=4k\noffset=18446744073709551615\n").unwrap_err();
    assert!(e.message.contains("passes 2^64"), "{e}");
    let text = "[j]\nrw=write\nsize=4k\noffset_increment=9223372036854775808\nnumjobs=3\n";
    let e = parse_fio_file(text, "job.fio", &WorkloadConfig::default(), None).unwrap_err();
    assert!(e.message.contains("passes 2^64"), "{e}");
}

#[test]
fn every_unsupported_option_is_reported_at_once_and_each_ignored_option_once() {
    let text = "[global]\nioengine=libaio\nhugepages=1\nsize=1m\n[a]\nrw=write\nflow=2\n[b]\nrw=write\nzonemode=zbd\nbs=3\n";
    let e = file(text).unwrap_err();
    assert_eq!(e.line, 3, "the first problem names its line: {e}");
    let m = &e.message;
    for part in [
        "`hugepages` is not supported",
        "and job.fio:7: fio option `flow`",
        "and job.fio:10: fio option `zonemode`",
        "and job.fio:11: fio option `bs=3`",
        "supported: rw",
    ] {
        assert!(m.contains(part), "{part}: {m}");
    }
    assert_eq!(m.matches("hugepages").count(), 1, "a [global] line copied into two jobs is one problem: {m}");
    let text = "[global]\nioengine=libaio\nsize=1m\nhipri\n[a]\nrw=write\nend_fsync=1\n[b]\nrw=write\nend_fsync=1\niodepth_batch_submit=8\n";
    let f = file(text).unwrap();
    assert_eq!(
        f.ignored,
        [
            "job.fio:2: ioengine",
            "job.fio:4: hipri",
            "job.fio:7: end_fsync",
            "job.fio:11: iodepth_batch_submit"
        ],
        "each ignored option once, at its first line"
    );
    assert_eq!(
        f.global_options,
        [("ioengine".into(), "libaio".into()), ("size".into(), "1m".into()), ("hipri".into(), String::new())]
    );
}

#[test]
fn reporting_options_shape_the_groups_report() {
    let f =
        file("[j]\nrw=randtrim\nsize=1m\nlat_percentiles=1\nclat_percentiles=0\npercentile_list=99.9:50\n")
            .unwrap();
    let g = &f.groups[0];
    assert_eq!(g.report.percentiles, [50.0, 99.9], "sorted as fio prints them");
    assert!(g.report.lat_percentiles && !g.report.clat_percentiles);
    assert_eq!(g.options[0], ("rw".to_string(), "randtrim".to_string()));
    assert_eq!(file("[j]\nrw=write\nsize=1m\nnumjobs=3\n").unwrap().groups[0].jobs, 3);
    assert_eq!(file("[j]\nsize=1m\n").unwrap().groups[0].report.percentiles.len(), 17, "fio's default list");
    let e = file("[j]\nsize=1m\npercentile_list=0:50\n").unwrap_err();
    assert!(e.message.contains("(0, 100]"), "{e}");
}
