//! `trimlab bench`'s FTL-alone rows: the 8 GiB page-mapped FTL of the device cases, built as
//! the device builds it, driven directly with no host side at all: no command queue, closed
//! loop, address generator, write buffer, TRIM engine, latency or host counters. Random page
//! writes reach it in the device's flush batches (warm, write, program what is ready, GC), and
//! in the TRIM case one operation in ten is a one-page TRIM applied at once, as the immediate
//! engine's step 3 does.
//!
//! What it shows: the NAND programs per second that the FTL, GC and the NAND timeline allow by
//! themselves, against the same limit as the device cases. A device case's `x limit` cannot
//! rise above its FTL-alone row's however cheap the host side became; the gap between the two
//! is what the host side costs (docs/performance.md, "Session 16").
//!
//! Wall-clock time is read here, at the edge, never inside the model.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::cases::{ssd_config, Shape};
use crate::limit;
use crate::ui::Ui;
use anyhow::Result;
use std::time::Instant;
use trimlab_device::FtlKind;
use trimlab_ftl::{Ftl, Lpn};
use trimlab_sim::SimTime;

/// The rows: the device cases' 8 GiB immediate drive, without and with 10 % TRIMs.
const CASES: [(&str, f64); 2] = [("8GiB immediate", 0.0), ("8GiB immediate trim10%", 0.1)];
const LOGICAL_BYTES: u64 = 8 << 30;
/// Host page writes timed, in the drive's capacities (the device cases' `measured`).
const MEASURED: f64 = 2.0;

pub(super) fn run(ui: &mut dyn Ui) -> Result<()> {
    ui.line("");
    ui.line(&format!(
        "{:<30} {:>14} {:>14} {:>7} {:>14} {:>7}",
        "FTL alone (no host side)", "host writes/s", "NAND progs/s", "WAF", "limit w/s", "x limit"
    ));
    for (name, trim_share) in CASES {
        let m = measure(LOGICAL_BYTES, trim_share, MEASURED)?;
        let limit = limit::case_limit(m.maps, m.programs.clamp(1 << 20, 1 << 27));
        let programs_per_s = m.programs as f64 / m.seconds;
        ui.line(&format!(
            "{:<30} {:>14.0} {:>14.0} {:>7.3} {:>14.0} {:>7.2}",
            name,
            m.host_writes as f64 / m.seconds,
            programs_per_s,
            m.programs as f64 / m.host_writes as f64,
            limit,
            programs_per_s / limit,
        ));
    }
    Ok(())
}

/// One timed phase: host page writes and NAND pages programmed in it, and its wall time.
struct Measured {
    host_writes: u64,
    programs: u64,
    seconds: f64,
    maps: limit::Maps,
}

/// Fills the drive in order, writes its capacity once more at random with the TRIM share (GC
/// steady state), then times `measured` capacities of random writes and checks the maps.
fn measure(logical_bytes: u64, trim_share: f64, measured: f64) -> Result<Measured> {
    let config =
        ssd_config(logical_bytes, FtlKind::Page, trimlab_trim::EngineKind::Immediate, Shape::Preset)?;
    let batch_pages = config.flush_batch_pages();
    let maps = limit::Maps::new(config.logical_pages, config.geometry.physical_pages() as u32);
    let mut driver = Driver {
        ftl: config.build_ftl(),
        batch: Vec::with_capacity(batch_pages),
        batch_pages,
        logical_pages: config.logical_pages,
        trim_below: (trim_share * f64::from(u32::MAX)) as u32,
        x: 0x9E37_79B9_7F4A_7C15,
        now: SimTime::ZERO,
    };
    driver.fill();
    driver.random_writes(u64::from(config.logical_pages));
    let before = (driver.ftl.flash().counters().pages_programmed, driver.ftl.stats().host_pages_programmed);
    let wall = Instant::now();
    driver.random_writes((f64::from(config.logical_pages) * measured) as u64);
    let seconds = wall.elapsed().as_secs_f64();
    let programs = driver.ftl.flash().counters().pages_programmed - before.0;
    // Counted by the FTL, not taken from the request: the test holds the driver to it.
    let host_writes = driver.ftl.stats().host_pages_programmed - before.1;
    driver.ftl.check().map_err(anyhow::Error::msg)?;
    Ok(Measured { host_writes, programs, seconds, maps })
}

struct Driver {
    ftl: Box<dyn Ftl>,
    batch: Vec<(Lpn, u64)>,
    batch_pages: usize,
    logical_pages: u32,
    /// A draw whose low half is below this is a TRIM.
    trim_below: u32,
    /// xorshift64 state: the limit loop's generator, so neither side pays for a better one.
    x: u64,
    now: SimTime,
}

impl Driver {
    fn fill(&mut self) {
        for lpn in 0..self.logical_pages {
            self.push(Lpn(lpn));
        }
        self.flush();
    }

    /// Random operations until `writes` host page writes have been made (TRIMs are extra).
    fn random_writes(&mut self, writes: u64) {
        let mut left = writes;
        while left > 0 {
            let draw = limit::xorshift64(&mut self.x);
            // The high half scaled to the drive (multiply-high: no division).
            let lpn = Lpn((((draw >> 32) * u64::from(self.logical_pages)) >> 32) as u32);
            if (draw as u32) < self.trim_below {
                self.ftl.trim(self.now, lpn, 1);
            } else {
                self.push(lpn);
                left -= 1;
            }
        }
        self.flush();
    }

    fn push(&mut self, lpn: Lpn) {
        self.batch.push((lpn, 0));
        if self.batch.len() == self.batch_pages {
            self.flush();
        }
    }

    /// What the device's `flush_oldest` does with a batch, without the write buffer.
    fn flush(&mut self) {
        let now = self.now;
        self.ftl.warm(&self.batch);
        let mut done = now;
        for &(lpn, tag) in &self.batch {
            done = done.max(self.ftl.write(now, lpn, tag));
        }
        done = done.max(self.ftl.program_ready(now));
        self.batch.clear();
        while let Some(plane) = self.ftl.take_gc_request() {
            self.ftl.collect_garbage(now, plane);
        }
        self.now = done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a small drive the driver makes exactly the host writes it reports, GC copies pages
    /// (more programs than writes), TRIMs unmap pages, and the maps agree at the end.
    #[test]
    fn drives_the_ftl_with_gc_and_trims_and_keeps_the_maps_consistent() {
        let m = measure(64 << 20, 0.1, 1.0).unwrap();
        assert_eq!(m.host_writes, 16384);
        assert!(m.programs > m.host_writes, "no GC copies: {} programs", m.programs);
        let without = measure(64 << 20, 0.0, 1.0).unwrap();
        // TRIMs leave GC fewer valid pages to copy.
        assert!(m.programs < without.programs, "{} vs {}", m.programs, without.programs);
    }
}
