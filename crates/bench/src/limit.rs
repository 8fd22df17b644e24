//! The bare-map limit of `trimlab bench`: the fastest loop this machine runs that does what a
//! page-mapping FTL cannot avoid per page programmed (one random forward-map swap, one random
//! backward-map invalidation, one backward-map append), and the same loop in C
//! (`scripts/bench/limit.c`, built with `cc -O2` and run in the same bench when a compiler
//! exists), so that anyone can check the Rust loop is as tight as C's.
//!
//! The loop pays no cost a C loop would not: an xorshift64 step inlined (no `gen_range`), the
//! logical page masked to the forward map's power-of-two size (no bounds check, no range
//! reduction), the invalidation's bounds check and the "no old page" test folded into one
//! compare, no allocation and no clock inside. Both loops draw the same addresses from the same
//! seed and end with the same checksum, which the bench checks.
//!
//! Wall-clock time and a child process are used here, at the edge: this measures the machine.
// Bench measures wall-clock speed of the machine; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// An unmapped entry in either map.
const NONE: u32 = u32::MAX;
/// The C loop's source, built at bench time.
const C_SOURCE: &str = include_str!("../../../scripts/bench/limit.c");
/// Rounds of the head-to-head comparison (Rust and C alternate) and writes per pass: about
/// 0.2 s per pass at 40 M writes/s, short so that each pair of passes shares the machine's
/// load of the moment, and many, so that the medians hold on a loaded machine.
const ROUNDS: usize = 9;
const ROUND_WRITES: u64 = 1 << 23;
/// The seed of the limit's address stream ("trimlab" in ASCII; any value does, both loops get
/// the same).
const SEED: u64 = 0x0074_7269_6d6c_6162;

/// The maps' sizes: the forward map is rounded down to a power of two so the loop can mask
/// (a smaller map can only make the limit faster, never flatter the ratio).
#[derive(Clone, Copy, Debug)]
pub(super) struct Maps {
    pub forward_log2: u32,
    pub physical_pages: u32,
}

impl Maps {
    pub fn new(logical_pages: u32, physical_pages: u32) -> Maps {
        Maps { forward_log2: logical_pages.max(1).ilog2(), physical_pages: physical_pages.max(1) }
    }
}

/// One timed pass of a loop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Pass {
    pub writes_per_s: f64,
    /// The maps' entries summed (wrapping) after the pass: equal for equal work.
    pub checksum: u64,
}

/// The Rust limit loop over freshly filled maps (allocated and faulted in before the clock).
pub(super) fn rust_pass(maps: Maps, writes: u64, seed: u64) -> Pass {
    let mut forward = vec![NONE; 1usize << maps.forward_log2];
    let mut backward = vec![NONE; maps.physical_pages as usize];
    let wall = Instant::now();
    let state = map_loop(&mut forward, &mut backward, writes, seed | 1);
    let seconds = wall.elapsed().as_secs_f64();
    // The maps and the generator's state stay observable, so nothing is optimised away.
    std::hint::black_box(state);
    let checksum = forward.iter().chain(&backward).fold(0u64, |sum, &e| sum.wrapping_add(u64::from(e)));
    Pass { writes_per_s: writes as f64 / seconds, checksum }
}

/// One step of xorshift64 (Marsaglia 13/7/17), as limit.c draws: the state after it.
#[inline(always)]
pub(super) fn xorshift64(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// `writes` page writes; returns the generator's state. `forward.len()` must be a power of two
/// (so `& mask` keeps every index in range without a check) and `backward` non-empty.
#[inline(never)]
fn map_loop(forward: &mut [u32], backward: &mut [u32], writes: u64, mut x: u64) -> u64 {
    assert!(forward.len().is_power_of_two() && !backward.is_empty());
    let mask = forward.len() - 1;
    let mut left = writes;
    // The physical log in laps: inside one `next` runs below `lap <= backward.len()`, so the
    // compiler drops the append's bounds check and the wrap costs nothing per write.
    while left > 0 {
        let lap = left.min(backward.len() as u64) as usize;
        for next in 0..lap {
            let lpn = xorshift64(&mut x) as usize & mask;
            let old = std::mem::replace(&mut forward[lpn], next as u32);
            // NONE is beyond any backward map, so one compare is both the bounds check and
            // the "was it mapped" test.
            if let Some(slot) = backward.get_mut(old as usize) {
                *slot = NONE;
            }
            backward[next] = lpn as u32;
        }
        left -= lap as u64;
    }
    x
}

/// limit.c built in a temporary directory, removed however the bench ends.
pub(super) struct CLoop {
    dir: PathBuf,
    binary: PathBuf,
}

impl Drop for CLoop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl CLoop {
    /// Builds limit.c with `$CC` (default `cc`) `-O2`. An error says why (no compiler, build
    /// failed): the bench prints it and goes on with the Rust loop alone.
    pub fn build() -> Result<CLoop> {
        let dir = std::env::temp_dir().join(format!("trimlab-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let c_loop = CLoop { binary: dir.join("limit"), dir };
        let source = c_loop.dir.join("limit.c");
        std::fs::write(&source, C_SOURCE).with_context(|| format!("cannot write {}", source.display()))?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = Command::new(&cc)
            .args(["-O2", "-o"])
            .arg(&c_loop.binary)
            .arg(&source)
            .output()
            .with_context(|| format!("no C compiler: cannot run `{cc}` (set CC to use another)"))?;
        if !out.status.success() {
            bail!("`{cc} -O2` failed on limit.c: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(c_loop)
    }

    /// One pass of the C loop with the same arguments as `rust_pass`.
    pub fn pass(&self, maps: Maps, writes: u64, seed: u64) -> Result<Pass> {
        run_c(&self.binary, "map", maps, writes, seed)
    }
}

fn run_c(binary: &Path, mode: &str, maps: Maps, writes: u64, seed: u64) -> Result<Pass> {
    let out = Command::new(binary)
        .arg(mode)
        .args([maps.forward_log2 as u64, maps.physical_pages as u64, writes, seed].map(|n| n.to_string()))
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("{} failed: {}", binary.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    let mut fields = text.split_whitespace();
    match (fields.next().map(str::parse::<f64>), fields.next().map(str::parse::<u64>)) {
        (Some(Ok(writes_per_s)), Some(Ok(checksum))) => Ok(Pass { writes_per_s, checksum }),
        _ => bail!("{} printed {text:?} (expected \"<writes per second> <checksum>\")", binary.display()),
    }
}

/// The limit for one bench case: the best of three passes of the Rust loop over the case's
/// maps, `writes` in all. Best, not median: the limit is what the machine can do.
pub(super) fn case_limit(maps: Maps, writes: u64) -> f64 {
    (0..3).map(|_| rust_pass(maps, writes.div_ceil(3), SEED).writes_per_s).fold(0.0, f64::max)
}

/// The head-to-head comparison: `ROUNDS` alternating rounds of the Rust and the C loop over
/// `maps`, each round's rates, then the medians, the bests and Rust/C. Fails if the two loops
/// disagree on the checksum (they did different work).
pub(super) fn compare(maps: Maps, ui: &mut dyn Ui) -> Result<()> {
    ui.line(&format!(
        "limit: the bare-map loop (forward swap, backward invalidate + append) over 2^{} x {} u32 \
         entries, {ROUNDS} alternating rounds of {ROUND_WRITES} writes",
        maps.forward_log2, maps.physical_pages
    ));
    let c_loop = match CLoop::build() {
        Ok(c_loop) => Some(c_loop),
        Err(e) => {
            ui.line(&format!("limit: C loop skipped: {e:#}"));
            None
        }
    };
    let (mut rust, mut c, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=ROUNDS {
        let r = rust_pass(maps, ROUND_WRITES, SEED);
        let mut line = format!("limit round {round}: Rust {:>6.1} M w/s", r.writes_per_s / 1e6);
        if let Some(c_loop) = &c_loop {
            let p = c_loop.pass(maps, ROUND_WRITES, SEED)?;
            if p.checksum != r.checksum {
                bail!(
                    "limit: the C loop's checksum {} differs from Rust's {}: not the same work",
                    p.checksum,
                    r.checksum
                );
            }
            line += &format!(
                "   C {:>6.1} M w/s   Rust/C {:.2}",
                p.writes_per_s / 1e6,
                r.writes_per_s / p.writes_per_s
            );
            c.push(p.writes_per_s);
            ratios.push(r.writes_per_s / p.writes_per_s);
        }
        rust.push(r.writes_per_s);
        ui.line(&line);
    }
    let (rust_median, rust_best) = median_best(&mut rust);
    let mut summary =
        format!("limit: Rust median {:.1} M w/s (best {:.1})", rust_median / 1e6, rust_best / 1e6);
    if !c.is_empty() {
        let (c_median, c_best) = median_best(&mut c);
        summary += &format!(
            ", C median {:.1} M w/s (best {:.1}); Rust/C {:.2} (median of the rounds' ratios), {:.2} \
             (of the medians), {:.2} (of the bests); checksums equal",
            c_median / 1e6,
            c_best / 1e6,
            median_best(&mut ratios).0,
            rust_median / c_median,
            rust_best / c_best
        );
    }
    ui.line(&summary);
    if let Some(c_loop) = &c_loop {
        // For scale: without the read of the old entry the stores overlap freely.
        let store = run_c(&c_loop.binary, "store", maps, ROUND_WRITES, SEED)?;
        ui.line(&format!(
            "limit: for scale, C's store-only loop (one random store per write, no map read) {:.1} M w/s",
            store.writes_per_s / 1e6
        ));
    }
    Ok(())
}

/// The median (upper middle for an even count) and the largest of `rates`.
fn median_best(rates: &mut [f64]) -> (f64, f64) {
    rates.sort_by(f64::total_cmp);
    (rates[rates.len() / 2], rates[rates.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop in laps against the plain loop it stands for (one write at a time, the log
    /// wrapping with a modulo), over several laps and a partial one; and every live backward
    /// entry is the forward map's current mapping.
    #[test]
    fn map_loop_equals_the_plain_loop() {
        let (forward_len, physical, writes) = (64usize, 80usize, 1000u64);
        let mut forward = vec![NONE; forward_len];
        let mut backward = vec![NONE; physical];
        let state = map_loop(&mut forward, &mut backward, writes, SEED | 1);
        let mut plain_forward = vec![NONE; forward_len];
        let mut plain_backward = vec![NONE; physical];
        let mut x = SEED | 1;
        for i in 0..writes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lpn = x as usize % forward_len;
            let next = (i % physical as u64) as usize;
            let old = plain_forward[lpn];
            plain_forward[lpn] = next as u32;
            if old != NONE {
                plain_backward[old as usize] = NONE;
            }
            plain_backward[next] = lpn as u32;
        }
        assert_eq!((state, &forward, &backward), (x, &plain_forward, &plain_backward));
        assert!(backward.iter().any(|&lpn| lpn != NONE));
        for (ppn, &lpn) in backward.iter().enumerate() {
            if lpn != NONE {
                assert_eq!(forward[lpn as usize], ppn as u32, "backward[{ppn}] = {lpn}");
            }
        }
    }

    /// The C loop, where a compiler exists, does exactly the Rust loop's work.
    #[test]
    fn c_loop_matches_rust_checksum() {
        let Ok(c_loop) = CLoop::build() else {
            eprintln!("SKIPPED: no C compiler to build scripts/bench/limit.c");
            return;
        };
        let maps = Maps::new(1 << 12, 5000);
        let c = c_loop.pass(maps, 100_000, 42).expect("the C loop runs");
        assert_eq!(c.checksum, rust_pass(maps, 100_000, 42).checksum);
    }
}
