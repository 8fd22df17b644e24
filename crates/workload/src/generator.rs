//! The synthetic operation stream: which command comes next and where it goes.

use crate::config::{AccessPattern, WorkloadConfig};
use crate::op::direction;
pub use crate::op::Op;
use crate::random_map::RandomMap;
use crate::rate::Pacer;
use rand::Rng;
use rand::SeedableRng;
use rand_distr::{Distribution, Zipf};
use trimlab_device::CommandKind;
use trimlab_sim::{SeedTree, SimRng, SimTime};

/// Chooses slots (block-sized pieces of the region) under one access pattern.
struct Addresser {
    pattern: AccessPattern,
    slots: u64,
    hot_slots: u64,
    hot_access: f64,
    zipf: Option<Zipf<f64>>,
    scatter_multiplier: u64,
    cursor: u64,
    /// fio's random map (uniform random only, as fio disables it for the other distributions).
    map: Option<RandomMap>,
    /// Pareto: fio's exponent ln H / ln (1 - H).
    pareto_power: f64,
    /// Normal: fio's deviation in slots (0: none).
    normal_deviation: i64,
    /// Zoned: for each percent of the operations, the (first slot, slots) of its zone.
    zone_of_percent: Vec<(u64, u64)>,
    /// Sequential: slots skipped after each command (fio's `rw=write:112k`; negative: back).
    skip: i64,
    /// Random: a new offset every `run` commands, the others following on (fio's
    /// `rw=randread:8`); `run_left` counts down to the next draw.
    run: u32,
    run_left: u32,
}

impl Addresser {
    fn new(config: &WorkloadConfig, slots: u64, slot_bytes: u64) -> Self {
        let zipf = (config.pattern == AccessPattern::Zipf)
            .then(|| Zipf::new(slots, config.zipf_theta).expect("validated: slots >= 1, theta > 0"));
        let map = (config.pattern == AccessPattern::UniformRandom && config.random_map == Some(true))
            .then(|| RandomMap::new(slots));
        let pareto_power = config.pareto_h.map_or(1.0, |h| h.ln() / (1.0 - h).ln());
        // fio's gauss_init: stddev = ceil(slots * dev / 100), at most half the region.
        let normal_deviation = config
            .normal_deviation_percent
            .map_or(0, |d| ((slots as f64 * d / 100.0).ceil() as u64).min(slots / 2) as i64);
        Addresser {
            pattern: config.pattern,
            slots,
            hot_slots: ((slots as f64 * config.hot_fraction).round() as u64).clamp(1, slots.max(2) - 1),
            hot_access: config.hot_access,
            zipf,
            scatter_multiplier: coprime_multiplier(slots),
            cursor: 0,
            map,
            pareto_power,
            normal_deviation,
            zone_of_percent: zone_table(config, slots, slot_bytes),
            skip: config.sequential_skip_bytes.map_or(0, |b| b / slot_bytes.max(1) as i64),
            run: config.random_run.unwrap_or(0),
            run_left: config.random_run.unwrap_or(0),
        }
    }

    /// Spreads a rank over the region (fio hashes it) so popular blocks are not adjacent.
    fn scatter(&self, rank: u64) -> u64 {
        ((rank % self.slots) as u128 * self.scatter_multiplier as u128 % self.slots as u128) as u64
    }

    /// fio's gauss_next: the mean of 12 uniform draws over 0..=slots, plus a uniform deviation.
    fn normal(&mut self, rng: &mut SimRng) -> u64 {
        let sum: u64 = (0..12).map(|_| rng.gen_range(0..=self.slots)).sum();
        let mean = sum.div_ceil(12) as i64;
        let mut dev = 0i64;
        if self.normal_deviation > 0 {
            let r: f64 = rng.gen();
            dev = (self.normal_deviation as f64 * r) as i64 - self.normal_deviation / 2;
            while mean + dev < 0 || mean + dev >= self.slots as i64 {
                dev /= 2;
            }
        }
        self.scatter((mean + dev) as u64)
    }

    /// A slot for an operation `units` slots long (1 unless fio's `bssplit` is set): it fits
    /// in the region.
    #[inline]
    fn next(&mut self, rng: &mut SimRng, units: u64) -> u64 {
        if self.run > 0 {
            return self.next_in_run(rng, units);
        }
        let slot = self.draw(rng, units);
        self.mark(slot, units);
        slot
    }

    /// Marks a drawn command's slots used in fio's random map, when the stream keeps one.
    fn mark(&mut self, slot: u64, units: u64) {
        if let Some(map) = &mut self.map {
            (slot..slot + units).for_each(|s| map.mark(s));
        }
    }

    /// fio's ddir_seq_nr: every `run`th command draws (and marks the random map); the others
    /// start where the previous one ended, as fio's get_next_seq_offset does.
    fn next_in_run(&mut self, rng: &mut SimRng, units: u64) -> u64 {
        self.run_left -= 1;
        let slot = if self.run_left == 0 {
            self.run_left = self.run;
            let slot = self.draw(rng, units);
            self.mark(slot, units);
            slot
        } else if self.cursor > self.slots - units {
            0
        } else {
            self.cursor
        };
        self.cursor = slot + units;
        slot
    }

    /// The next sequential slot. With a skip, fio's get_next_seq_offset: the skip is added to
    /// the end of the previous command (not before the first); past either end of the
    /// region, a forward skip restarts at the start and a backward one at the end plus the skip.
    #[inline]
    fn sequential(&mut self, units: u64, last: u64) -> u64 {
        let slot = if self.cursor > last { 0 } else { self.cursor };
        let next = slot + units;
        self.cursor = if self.skip == 0 {
            if next >= self.slots {
                0
            } else {
                next
            }
        } else {
            let moved = next as i64 + self.skip;
            if moved >= 0 && (moved as u64) < self.slots {
                moved as u64
            } else if self.skip > 0 {
                0
            } else {
                (self.slots as i64 + self.skip).max(0) as u64
            }
        };
        slot
    }

    #[inline]
    fn draw(&mut self, rng: &mut SimRng, units: u64) -> u64 {
        let last = self.slots - units; // the last slot an operation of `units` may start at
        match self.pattern {
            AccessPattern::Sequential => self.sequential(units, last),
            AccessPattern::UniformRandom => {
                let drawn = rng.gen_range(0..self.slots);
                self.map.as_mut().map_or(drawn, |m| m.claim(drawn)).min(last)
            }
            AccessPattern::Pareto => {
                let u: f64 = rng.gen();
                let rank = ((self.slots - 1) as f64 * u.powf(self.pareto_power)) as u64;
                self.scatter(rank).min(last)
            }
            AccessPattern::Normal => self.normal(rng).min(last),
            AccessPattern::HotCold => {
                let slot = if self.slots < 2 {
                    0
                } else if rng.gen_bool(self.hot_access) {
                    rng.gen_range(0..self.hot_slots)
                } else {
                    rng.gen_range(self.hot_slots..self.slots)
                };
                slot.min(last)
            }
            AccessPattern::Zipf => {
                let rank = self.zipf.as_ref().map_or(1.0, |z| z.sample(rng)) as u64;
                // Scatter ranks over the region so popular pages are not all adjacent.
                (((rank - 1) as u128 * self.scatter_multiplier as u128 % self.slots as u128) as u64).min(last)
            }
            AccessPattern::Zoned => {
                let (first, len) = self.zone_of_percent[rng.gen_range(0..100usize)];
                (first + rng.gen_range(0..len.max(1))).min(last)
            }
        }
    }
}

/// fio's zone_state_index: which zone each of the 100 access percents falls in, as (first
/// slot, slots). A percentage zone starts at `size_prev * slots / 100` and spans
/// `slots * size / 100` (fio's __get_next_rand_offset_zoned); a byte-sized zone
/// (`zoned_abs`) spans its bytes in whole slots. Empty unless the pattern is zoned.
fn zone_table(config: &WorkloadConfig, slots: u64, slot_bytes: u64) -> Vec<(u64, u64)> {
    let Some(zones) = config.zones.as_ref().filter(|_| config.pattern == AccessPattern::Zoned) else {
        return Vec::new();
    };
    let mut table = Vec::with_capacity(100);
    let (mut size_prev, mut bytes_prev) = (0u64, 0u64);
    for zone in zones {
        let (first, len) = match (zone.size_percent, zone.bytes) {
            (Some(p), _) => {
                let span = (size_prev * slots / 100, slots * u64::from(p) / 100);
                size_prev += u64::from(p);
                span
            }
            (None, Some(b)) => {
                let first = bytes_prev / slot_bytes.max(1);
                bytes_prev += b.0;
                (first, (bytes_prev / slot_bytes.max(1)).saturating_sub(first))
            }
            (None, None) => (0, slots),
        };
        table.extend(std::iter::repeat_n(
            (first.min(slots.saturating_sub(1)), len),
            zone.access_percent as usize,
        ));
    }
    table.resize(100, (0, slots));
    table
}

/// A multiplier coprime with `n`, so x -> x * m mod n is a permutation.
fn coprime_multiplier(n: u64) -> u64 {
    if n <= 2 {
        return 1;
    }
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut m = (0x9E37_79B9_7F4A_7C15u64 % n).max(2);
    while gcd(m, n) != 1 {
        m += 1;
    }
    m
}

/// Block sizes drawn by share (fio's `bssplit`), in units of the smallest.
struct BlockSplit {
    /// (units, cumulative percent), the last at 100.
    sizes: Vec<(u64, u32)>,
}

impl BlockSplit {
    fn units(&self, rng: &mut SimRng) -> u64 {
        let x = rng.gen_range(0..100u32);
        self.sizes.iter().find(|(_, upto)| x < *upto).map_or(1, |(units, _)| *units)
    }
}

/// When a stream stops issuing (fio's end of a job): bytes of the directions it counts,
/// operations, or time since it started. Checked before each command, as fio checks issued I/O.
struct Limits {
    io_bytes: Option<u64>,
    ops: Option<u64>,
    runtime_ns: Option<u64>,
    /// Which of read, write, trim count toward `io_bytes` (fio's io_bytes_exceeded).
    counted: [bool; 3],
    start: Option<SimTime>,
    bytes: u64,
    issued: u64,
}

impl Limits {
    fn new(config: &WorkloadConfig) -> Option<Limits> {
        if config.io_bytes.is_none() && config.runtime.is_none() {
            return None;
        }
        let reads = config.read_fraction > 0.0;
        let writes =
            config.read_fraction + config.trim_fraction < 1.0 || config.trim_then_write == Some(true);
        // fio: a read/write mix counts both; else writes; else reads; else TRIMs.
        let counted = match (reads, writes) {
            (true, true) => [true, true, false],
            (false, true) => [false, true, false],
            (true, false) => [true, false, false],
            (false, false) => [false, false, true],
        };
        Some(Limits {
            io_bytes: config.io_bytes.map(|b| b.0),
            ops: config.ops,
            runtime_ns: config.runtime.map(|d| d.0),
            counted,
            start: None,
            bytes: 0,
            issued: 0,
        })
    }

    fn done(&mut self, now: SimTime) -> bool {
        let start = *self.start.get_or_insert(now);
        self.io_bytes.is_some_and(|b| self.bytes >= b)
            || self.ops.is_some_and(|n| self.issued >= n)
            || self.runtime_ns.is_some_and(|ns| now.since(start) >= ns)
    }

    fn count(&mut self, op: &Op) {
        let Some(index) = direction(op.kind) else { return };
        if self.counted[index] {
            self.bytes += op.bytes;
        }
        self.issued += 1;
    }
}

/// One of several streams running at once: its generator serves submitters `first..end`.
struct Job {
    first: u32,
    end: u32,
    think_time_ns: u64,
    generator: Generator,
}

pub struct Generator {
    region_offset: u64,
    block_bytes: u64,
    trim_bytes: u64,
    read_fraction: f64,
    trim_fraction: f64,
    blocks: Addresser,
    trims: Addresser,
    mix_rng: SimRng,
    address_rng: SimRng,
    split: Option<BlockSplit>,
    /// fio's trimwrite: the write that follows the TRIM just issued.
    trim_then_write: bool,
    pending_write: Option<Op>,
    limits: Option<Limits>,
    /// fio's rate limits: when a drawn command may be issued.
    pacer: Option<Pacer>,
    jobs: Vec<Job>,
}

impl Generator {
    /// `config` must have been validated against this capacity.
    pub fn new(config: &WorkloadConfig, capacity_bytes: u64, mix_rng: SimRng, address_rng: SimRng) -> Self {
        // fio's randseed: the stream's numbers come from its own seed.
        let (mix_rng, mut address_rng) = match config.stream_seed {
            Some(seed) => (SeedTree::new(seed).fork("fio.mix"), SeedTree::new(seed).fork("fio.address")),
            None => (mix_rng, address_rng),
        };
        let jobs = Generator::jobs(config, capacity_bytes, &mut address_rng);
        let (region_offset, region_bytes) = config.region(capacity_bytes);
        let split = config.block_split.as_ref().map(|shares| {
            let unit = shares.iter().map(|s| s.bytes.0).min().unwrap_or(config.block_bytes.0);
            let mut upto = 0;
            let sizes = shares
                .iter()
                .map(|s| {
                    upto += s.percent;
                    (s.bytes.0 / unit, upto)
                })
                .collect();
            (unit, BlockSplit { sizes })
        });
        let block_bytes = split.as_ref().map_or(config.block_bytes.0, |(unit, _)| *unit);
        let trim_bytes = config.trim_bytes.unwrap_or(config.block_bytes).0;
        // Poisson gaps get their own stream, seeded from a copy so the addresses stay the
        // ones the stream draws without a rate.
        let pacer = Pacer::new(
            config,
            block_bytes,
            SimRng::seed_from_u64(address_rng.clone().gen::<u64>() ^ 0x7261_7465),
        );
        Generator {
            region_offset,
            block_bytes,
            trim_bytes,
            read_fraction: config.read_fraction,
            trim_fraction: config.trim_fraction,
            blocks: Addresser::new(config, region_bytes / block_bytes, block_bytes),
            trims: Addresser::new(config, region_bytes / trim_bytes, trim_bytes),
            mix_rng,
            address_rng,
            split: split.map(|(_, s)| s),
            trim_then_write: config.trim_then_write == Some(true),
            pending_write: None,
            limits: Limits::new(config),
            pacer,
            jobs,
        }
    }

    /// The streams of `config.jobs`, each seeded from the parent's address stream (or its own
    /// `stream_seed`), with consecutive submitter ranges.
    fn jobs(config: &WorkloadConfig, capacity_bytes: u64, rng: &mut SimRng) -> Vec<Job> {
        let mut first = 0;
        let mut jobs = Vec::new();
        for job in config.jobs.iter().flatten() {
            let (mix, address) = (SimRng::seed_from_u64(rng.gen()), SimRng::seed_from_u64(rng.gen()));
            let generator = Generator::new(job, capacity_bytes, mix, address);
            let end = first + job.queue_depth;
            jobs.push(Job { first, end, think_time_ns: job.think_time.0, generator });
            first = end;
        }
        jobs
    }

    /// How many submitters the generator serves: the sum of its streams' queue depths, or
    /// None for a single stream (the drive's own `queue_depth`).
    pub fn submitters(&self) -> Option<u32> {
        self.jobs.last().map(|j| j.end)
    }

    /// Think time of `submitter`'s stream, when the generator has streams of its own.
    #[inline]
    pub fn think_time_ns(&self, submitter: u32) -> Option<u64> {
        self.job_of(submitter).map(|i| self.jobs[i].think_time_ns)
    }

    fn job_of(&self, submitter: u32) -> Option<usize> {
        if self.jobs.is_empty() {
            return None;
        }
        Some(self.jobs.partition_point(|j| j.end <= submitter).min(self.jobs.len() - 1))
    }

    /// Starts another round of the same streams (a repeated phase): each stream's end (its
    /// `io_bytes`, `ops`, `runtime`) counts again from the round's first command, while the
    /// random draws and the sequential cursors go on.
    pub fn restart_ends(&mut self) {
        if let Some(l) = &mut self.limits {
            (l.start, l.bytes, l.issued) = (None, 0, 0);
        }
        for job in &mut self.jobs {
            job.generator.restart_ends();
        }
    }

    /// Whether any stream has a rate limit (the runner then asks [`Generator::issue_at`]).
    pub fn paced(&self) -> bool {
        self.pacer.is_some() || self.jobs.iter().any(|j| j.generator.paced())
    }

    /// When `op`, just drawn for `submitter` at `now`, may go to the drive (its stream's rate
    /// limit), or None when that is past the stream's runtime (fio stops the job instead).
    pub fn issue_at(&mut self, submitter: u32, op: &Op, now: SimTime) -> Option<SimTime> {
        if let Some(i) = self.job_of(submitter) {
            let job = &mut self.jobs[i];
            return job.generator.issue_at(submitter - job.first, op, now);
        }
        let Some(pacer) = &mut self.pacer else { return Some(now) };
        let at = pacer.issue_at(now, op);
        let past_end = self
            .limits
            .as_ref()
            .is_some_and(|l| l.runtime_ns.zip(l.start).is_some_and(|(ns, start)| at.since(start) >= ns));
        (!past_end).then_some(at)
    }

    /// The next command of `submitter` at `now`, or None when its stream has ended.
    #[inline]
    pub fn next_for(&mut self, submitter: u32, now: SimTime) -> Option<Op> {
        if let Some(i) = self.job_of(submitter) {
            let job = &mut self.jobs[i];
            return job.generator.next_for(submitter - job.first, now);
        }
        if self.limits.as_mut().is_some_and(|l| l.done(now)) {
            return None;
        }
        let op = self.next_op();
        if let Some(limits) = &mut self.limits {
            limits.count(&op);
        }
        Some(op)
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        if let Some(write) = self.pending_write.take() {
            return write;
        }
        let kind = if self.read_fraction == 0.0 && self.trim_fraction == 0.0 {
            CommandKind::Write
        } else {
            let x: f64 = self.mix_rng.gen();
            if x < self.trim_fraction {
                CommandKind::Trim
            } else if x < self.trim_fraction + self.read_fraction {
                CommandKind::Read
            } else {
                CommandKind::Write
            }
        };
        let units = self.split.as_ref().map_or(1, |s| s.units(&mut self.mix_rng));
        if self.trim_then_write {
            // fio's trimwrite: TRIM a block, then write the same block.
            let slot = self.blocks.next(&mut self.address_rng, units);
            let (offset, bytes) = (self.region_offset + slot * self.block_bytes, units * self.block_bytes);
            self.pending_write = Some(Op { kind: CommandKind::Write, offset, bytes });
            return Op { kind: CommandKind::Trim, offset, bytes };
        }
        match kind {
            CommandKind::Trim => {
                let slot = self.trims.next(&mut self.address_rng, 1);
                Op { kind, offset: self.region_offset + slot * self.trim_bytes, bytes: self.trim_bytes }
            }
            _ => {
                let slot = self.blocks.next(&mut self.address_rng, units);
                let bytes = units * self.block_bytes;
                Op { kind, offset: self.region_offset + slot * self.block_bytes, bytes }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_sim::SeedTree;

    fn generator(config: &WorkloadConfig, capacity: u64) -> Generator {
        let seeds = SeedTree::new(1);
        Generator::new(config, capacity, seeds.fork("mix"), seeds.fork("addr"))
    }

    #[test]
    fn sequential_wraps_inside_the_region() {
        let c = WorkloadConfig {
            pattern: AccessPattern::Sequential,
            region_offset: trimlab_sim::ByteSize(8192),
            region_bytes: Some(trimlab_sim::ByteSize(3 * 4096)),
            ..Default::default()
        };
        let mut g = generator(&c, 1 << 20);
        let offsets: Vec<_> = (0..4).map(|_| g.next_op().offset).collect();
        assert_eq!(offsets, vec![8192, 12288, 16384, 8192]);
    }

    #[test]
    fn mix_fractions_are_respected() {
        let c = WorkloadConfig { read_fraction: 0.3, trim_fraction: 0.1, ..Default::default() };
        let mut g = generator(&c, 1 << 30);
        let n = 100_000;
        let (mut reads, mut trims) = (0, 0);
        for _ in 0..n {
            match g.next_op().kind {
                CommandKind::Read => reads += 1,
                CommandKind::Trim => trims += 1,
                CommandKind::Write | CommandKind::Flush => {}
            }
        }
        assert!((reads as f64 / n as f64 - 0.3).abs() < 0.01);
        assert!((trims as f64 / n as f64 - 0.1).abs() < 0.01);
    }

    #[test]
    fn hot_cold_sends_most_operations_to_the_hot_share() {
        let c = WorkloadConfig {
            pattern: AccessPattern::HotCold,
            hot_fraction: 0.2,
            hot_access: 0.8,
            ..Default::default()
        };
        let capacity = 1u64 << 30;
        let mut g = generator(&c, capacity);
        let hot_end = capacity / 5;
        let hot = (0..50_000).filter(|_| g.next_op().offset < hot_end).count();
        assert!((hot as f64 / 50_000.0 - 0.8).abs() < 0.01, "{hot}");
    }

    #[test]
    fn zipf_is_skewed_and_stays_in_range() {
        let c = WorkloadConfig { pattern: AccessPattern::Zipf, zipf_theta: 1.2, ..Default::default() };
        let capacity = 1u64 << 26;
        let mut g = generator(&c, capacity);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..20_000 {
            let op = g.next_op();
            assert!(op.offset + op.bytes <= capacity);
            *counts.entry(op.offset).or_insert(0u32) += 1;
        }
        let top = counts.values().copied().max().unwrap();
        assert!(top > 1_000, "most popular page drew only {top} of 20000");
    }

    fn fio(text: &str) -> WorkloadConfig {
        let f = crate::fio::parse_fio_file(text, "t.fio", &WorkloadConfig::default(), Some(1 << 30)).unwrap();
        let mut jobs = f.groups[0].streams.clone();
        if jobs.len() == 1 {
            return jobs.remove(0);
        }
        WorkloadConfig { jobs: Some(jobs), ..Default::default() }
    }

    #[test]
    fn pareto_and_normal_concentrate_on_few_slots_inside_the_region() {
        for (dist, top_share_min) in [("pareto:0.2", 0.5), ("normal:5", 0.5)] {
            let c = fio(&format!("[j]\nrw=randread\nsize=64m\nrandom_distribution={dist}\n"));
            let mut g = generator(&c, 1 << 30);
            let mut counts = std::collections::BTreeMap::new();
            for _ in 0..20_000 {
                let op = g.next_op();
                assert!(op.offset + op.bytes <= 64 << 20, "{dist}");
                *counts.entry(op.offset).or_insert(0u32) += 1;
            }
            // The most popular tenth of the 16384 blocks draws at least this share.
            let mut v: Vec<_> = counts.values().copied().collect();
            v.sort_unstable_by(|a, b| b.cmp(a));
            let top: u32 = v.iter().take(1638).sum();
            assert!(f64::from(top) / 20_000.0 > top_share_min, "{dist}: {top}");
        }
    }

    #[test]
    fn block_split_and_trim_then_write() {
        let c = fio("[j]\nrw=randwrite\nsize=64m\nbssplit=4k/75:64k/25\n");
        let mut g = generator(&c, 1 << 30);
        let big = (0..10_000).filter(|_| g.next_op().bytes == 64 << 10).count();
        assert!((big as f64 / 10_000.0 - 0.25).abs() < 0.02, "{big}");
        let c = fio("[j]\nrw=randtrimwrite\nbs=16k\nsize=1m\n");
        let mut g = generator(&c, 1 << 30);
        for _ in 0..100 {
            let (t, w) = (g.next_op(), g.next_op());
            assert_eq!((t.kind, w.kind), (CommandKind::Trim, CommandKind::Write));
            assert_eq!((t.offset, t.bytes), (w.offset, w.bytes), "the write follows its TRIM");
        }
    }

    #[test]
    fn zoned_sends_each_share_to_its_own_part_of_the_region() {
        // JESD219's distribution: 50 % of commands to the first 5 %, 30 % to the next 15 %,
        // 20 % to the last 80 % (the blank size takes what is left, as in fio).
        let c = fio("[j]\nrw=randwrite\nsize=64m\nrandom_distribution=zoned:50/5:30/15:20/\n");
        let mut g = generator(&c, 1 << 30);
        let region = 64u64 << 20;
        let mut hits = [0u32; 3];
        for _ in 0..40_000 {
            let op = g.next_op();
            assert!(op.offset + op.bytes <= region);
            let zone = if op.offset < region / 20 {
                0
            } else if op.offset < region / 5 {
                1
            } else {
                2
            };
            hits[zone] += 1;
        }
        for (got, want) in hits.iter().zip([0.5, 0.3, 0.2]) {
            assert!((f64::from(*got) / 40_000.0 - want).abs() < 0.01, "{hits:?}");
        }
        // zoned_abs: byte sizes from the region's start; the rest of the region is never used.
        let c = fio("[j]\nrw=randread\nsize=64m\nrandom_distribution=zoned_abs:60/1m:40/3m\n");
        let mut g = generator(&c, 1 << 30);
        let ops: Vec<_> = (0..20_000).map(|_| g.next_op()).collect();
        assert!(ops.iter().all(|op| op.offset + op.bytes <= 4 << 20));
        let first = ops.iter().filter(|op| op.offset < 1 << 20).count();
        assert!((first as f64 / 20_000.0 - 0.6).abs() < 0.015, "{first}");
    }

    #[test]
    fn rw_modifiers_skip_go_backwards_and_run_on() {
        let offsets = |text: &str, n: usize| {
            let mut g = generator(&fio(text), 1 << 30);
            (0..n).map(|_| g.next_op().offset >> 10).collect::<Vec<_>>()
        };
        // write:112k with bs=16k: a 112k hole after each command, wrapping to the start.
        assert_eq!(offsets("[j]\nrw=write:112k\nbs=16k\nsize=512k\n", 5), [0, 128, 256, 384, 0]);
        // read:-8k with bs=4k (fio's backwards-read example): the first at 0, then from the
        // end backwards one block at a time.
        assert_eq!(offsets("[j]\nrw=read:-8k\nbs=4k\nsize=32k\n", 5), [0, 24, 20, 16, 12]);
        // randread:4: every fourth command draws, the three after it follow on.
        let o = offsets("[j]\nrw=randread:4\nbs=4k\nsize=64m\n", 12);
        assert_eq!(o[..3], [0, 4, 8], "the stream starts sequentially at the region's start");
        for run in o[3..].chunks(4) {
            assert_eq!(run.windows(2).filter(|w| w[1] != w[0] + 4).count(), 0, "{o:?}");
        }
    }

    #[test]
    fn streams_serve_their_own_submitters_and_end_on_their_own() {
        let c = fio("[a]\nrw=write\nbs=4k\nsize=40k\niodepth=2\n[b]\nrw=read\nbs=8k\nsize=1m\nruntime=1ms\niodepth=3\n");
        let mut g = generator(&c, 1 << 30);
        assert_eq!(g.submitters(), Some(5));
        let now = SimTime::ZERO;
        let a: Vec<_> = std::iter::from_fn(|| g.next_for(1, now)).collect();
        assert_eq!(a.len(), 10, "size=40k of 4k writes");
        assert!(a.iter().all(|op| op.kind == CommandKind::Write));
        assert_eq!(g.next_for(4, now).map(|op| (op.kind, op.bytes)), Some((CommandKind::Read, 8192)));
        assert_eq!(g.next_for(2, now.after(1_000_000)), None, "runtime=1ms has passed");
    }
}
