//! The switch for the full consistency check (forward and backward maps, valid counts, block
//! pool) after every GC, TRIM and power cut. It walks every map, so normal runs leave it off;
//! tests turn it on. A runtime switch rather than a cargo feature, so tests, `reproduce` and the
//! Python extension share one build of the workspace instead of compiling a second variant.
//!
//! The check only reads state and panics on a broken invariant: turning it on cannot change a
//! result, so this process-wide flag does not touch determinism.

use std::sync::atomic::{AtomicU8, Ordering};

const UNREAD: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static FULL_CHECKS: AtomicU8 = AtomicU8::new(UNREAD);

/// Turns the full check on for the rest of the process (tests, `--verify`).
pub fn enable() {
    FULL_CHECKS.store(ON, Ordering::Relaxed);
}

/// Whether the full check runs. Unless `enable` was called, `TRIMLAB_VERIFY=1` in the
/// environment turns it on: the one variable a model crate reads, so that `scripts/test-all`
/// checks every model a test builds, including those inside the `trimlab` binary it spawns.
pub fn enabled() -> bool {
    match FULL_CHECKS.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var_os("TRIMLAB_VERIFY").is_some_and(|v| v == "1");
            FULL_CHECKS.store(if on { ON } else { OFF }, Ordering::Relaxed);
            on
        }
    }
}

/// A drive of at most this many physical pages is checked after every step: a walk of its maps
/// costs less than the step's own bookkeeping in the model tests that build such drives.
const ALWAYS_CHECKED_PAGES: u64 = 1 << 12;

/// Full checks per drive's worth of work on a drive larger than `ALWAYS_CHECKED_PAGES`.
const CHECKS_PER_DRIVE: u64 = 4;

/// When the full check is due. A walk of the maps after every GC on a large drive makes a run
/// quadratic (a 1 GiB drive in the CLI tests: 324 s with, 9.5 s without); so on a drive larger
/// than `ALWAYS_CHECKED_PAGES` the check runs once the work since the last one (pages moved,
/// erased or trimmed) reaches a quarter of the drive. Its cost is then a constant factor of the
/// run's, and a broken invariant (they persist: a map that disagrees stays so) is still caught
/// within a quarter of a drive's worth of work, with the end-of-run check (`Ssd::check`) closing
/// the last stretch. It was a sixteenth until the check became two sequential passes
/// (map_agreement.rs); at a sixteenth the check still took two thirds of a verified
/// `reproduce ftl-trim` (117 s of CPU against 34 s unverified).
#[derive(Clone, Debug, Default)]
pub struct Cadence {
    work_since_check: u64,
}

impl Cadence {
    /// Records `work` pages of work on a drive of `physical_pages`; true when the check is due
    /// (always false while the switch is off).
    pub fn due(&mut self, work: u64, physical_pages: u64) -> bool {
        if !enabled() {
            return false;
        }
        self.work_since_check = self.work_since_check.saturating_add(work);
        if physical_pages <= ALWAYS_CHECKED_PAGES
            || self.work_since_check.saturating_mul(CHECKS_PER_DRIVE) >= physical_pages
        {
            self.work_since_check = 0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_drives_every_step_large_ones_every_quarter() {
        enable();
        let mut c = Cadence::default();
        assert!(c.due(1, 1000));
        let big = 1u64 << 20;
        let due: Vec<bool> = (0..40).map(|_| c.due(big / 64, big)).collect();
        assert_eq!(due.iter().filter(|&&d| d).count(), 2, "{due:?}");
        assert!(due[15] && !due[16] && due[31]);
    }
}
