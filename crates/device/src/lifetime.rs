//! A drive's lifetime under a workload: its rated endurance (P/E cycles per block; TBW or DWPD
//! where the datasheet gives them), the wear counters a caller reads at any moment
//! ([`Wear`]), and the projection of years until the rating is used at a daily host volume
//! ([`project`]). The formula and each input's source are in docs/lifetime.md, with what real
//! drives do that this projection leaves out (read disturb, retention, bad blocks, an SLC
//! cache).

use serde::Serialize;

/// Days per year in the projection (the Julian year: leap years included on average).
const DAYS_PER_YEAR: f64 = 365.25;
const NS_PER_DAY: f64 = 86_400e9;

/// A drive's rated endurance and the daily host volume to project at, resolved from the
/// preset's `[device] rated_*` keys under the user's. Every value is optional: a preset whose
/// datasheet gives no TBW leaves it unset, and without P/E cycles there is no projection.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Rating {
    /// P/E cycles a block is rated for (`rated_pe_cycles`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe_cycles: Option<u32>,
    /// Rated host bytes written over the warranty (`rated_tbw`) and the capacity of the drive
    /// they are rated for (`rated_capacity`): together, full drive writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tbw_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tbw_capacity_bytes: Option<u64>,
    /// Rated drive writes per day (`rated_dwpd`) over `rated_years`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dwpd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub years: Option<f64>,
    /// Host bytes a day to project at (`daily_host_bytes`); unset: the measured span's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_host_bytes: Option<u64>,
}

impl Rating {
    /// Full drive writes the rating allows: TBW over the capacity it is rated for, else DWPD
    /// times the days of the rated years. `None` without either.
    pub fn drive_writes(&self) -> Option<f64> {
        match (self.tbw_bytes, self.tbw_capacity_bytes, self.dwpd, self.years) {
            (Some(tbw), Some(capacity), _, _) if capacity > 0 => Some(tbw as f64 / capacity as f64),
            (_, _, Some(dwpd), Some(years)) => Some(dwpd * DAYS_PER_YEAR * years),
            _ => None,
        }
    }
}

/// The wear counters of a drive at one moment, cumulative since it was built: what a caller
/// subtracts to get a span's (a round's) figures. `Ssd::wear` reads them (the erase-count
/// maximum is a pass over the blocks' counts; the rest are counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Wear {
    pub at_ns: u64,
    /// Bytes the host wrote (device pages; a mapping unit's read-modify-write fill excluded).
    pub host_bytes_written: u64,
    /// Bytes programmed to NAND (host data, GC and wear-levelling copies, padding).
    pub nand_bytes_programmed: u64,
    /// Block erases over the drive (the sum of the blocks' erase counts).
    pub blocks_erased: u64,
    /// The most-worn block's erase count.
    pub erase_count_max: u32,
}

impl Wear {
    /// NAND bytes per host byte over the span from `before` to `self` (0 without host writes).
    pub fn waf_since(&self, before: &Wear) -> f64 {
        let host = self.host_bytes_written - before.host_bytes_written;
        match host {
            0 => 0.0,
            _ => (self.nand_bytes_programmed - before.nand_bytes_programmed) as f64 / host as f64,
        }
    }
}

/// The lifetime projection of one measured span (docs/lifetime.md, "The projection").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lifetime {
    pub rated_pe_cycles: u32,
    /// The daily host volume projected at, and where it comes from: "measured" (the span's
    /// host bytes over its simulated time, times a day) or "given" (`daily_host_bytes`).
    pub daily_host_bytes: f64,
    pub daily_host_bytes_from: &'static str,
    /// The same volume in full writes of the modelled capacity a day (capacity-free, so it
    /// carries to a larger drive of the same shape).
    pub drive_writes_per_day: f64,
    pub span_host_bytes: u64,
    pub span_ns: u64,
    /// Erases per block over the span, on average, and the rise of the largest erase count.
    pub span_erases_per_block: f64,
    pub span_erase_count_max_rise: u32,
    /// Years from a new drive until the most-worn block, and the average block, reach the
    /// rated P/E cycles at the span's wear per host byte (`None`: the span erased nothing).
    pub years_most_worn: Option<f64>,
    pub years_mean: Option<f64>,
    /// Rated full drive writes (TBW or DWPD) and the years they last at the daily volume.
    pub rated_drive_writes: Option<f64>,
    pub years_rated_writes: Option<f64>,
}

/// The projection for `rating` from the span between `before` and `after` on a drive of
/// `blocks` erase blocks and `logical_bytes` of capacity. `None` without rated P/E cycles or
/// without host writes in the span (there is no rate to project).
pub fn project(
    rating: &Rating,
    blocks: u64,
    logical_bytes: u64,
    before: &Wear,
    after: &Wear,
) -> Option<Lifetime> {
    let pe = rating.pe_cycles?;
    let host = after.host_bytes_written.checked_sub(before.host_bytes_written).filter(|&h| h > 0)?;
    let span_ns = after.at_ns.saturating_sub(before.at_ns);
    let (daily, from) = match rating.daily_host_bytes {
        Some(d) => (d as f64, "given"),
        None if span_ns > 0 => (host as f64 * NS_PER_DAY / span_ns as f64, "measured"),
        None => return None,
    };
    let erases_per_block = (after.blocks_erased - before.blocks_erased) as f64 / blocks.max(1) as f64;
    let max_rise = after.erase_count_max.saturating_sub(before.erase_count_max);
    // Erases per host byte, per block on average and of the most-worn block. The maximum can
    // never fall below the mean, so its rate is at least the mean's: a span too short for the
    // maximum to move does not make the most-worn block immortal.
    let mean_rate = erases_per_block / host as f64;
    let worst_rate = (max_rise as f64).max(erases_per_block) / host as f64;
    let years = |rate: f64| (rate > 0.0 && daily > 0.0).then(|| pe as f64 / (rate * daily * DAYS_PER_YEAR));
    let rated_drive_writes = rating.drive_writes();
    Some(Lifetime {
        rated_pe_cycles: pe,
        daily_host_bytes: daily,
        daily_host_bytes_from: from,
        drive_writes_per_day: daily / logical_bytes.max(1) as f64,
        span_host_bytes: host,
        span_ns,
        span_erases_per_block: erases_per_block,
        span_erase_count_max_rise: max_rise,
        years_most_worn: years(worst_rate),
        years_mean: years(mean_rate),
        rated_drive_writes,
        years_rated_writes: rated_drive_writes
            .filter(|_| daily > 0.0)
            .map(|w| w * logical_bytes as f64 / (daily * DAYS_PER_YEAR)),
    })
}

impl Lifetime {
    /// One line for a run's printed summary.
    pub fn summary_line(&self) -> String {
        let years = |y: Option<f64>| match y {
            None => "never (no erases)".to_string(),
            Some(y) if y >= 1.0 => format!("{y:.2} years"),
            Some(y) => format!("{:.1} days", y * DAYS_PER_YEAR),
        };
        let mut line = format!(
            "lifetime at {:.3} GB/day ({:.3} drive writes/day, {}): {} rated P/E cycles last {} for the most-worn block, {} on average",
            self.daily_host_bytes / 1e9,
            self.drive_writes_per_day,
            self.daily_host_bytes_from,
            self.rated_pe_cycles,
            years(self.years_most_worn),
            years(self.years_mean),
        );
        if let (Some(w), Some(y)) = (self.rated_drive_writes, self.years_rated_writes) {
            line.push_str(&format!("; the rated {w:.0} drive writes last {}", years(Some(y))));
        }
        if let Some(why) = self.measured_rate_warning() {
            line.push_str(&format!(" ({why})"));
        }
        line
    }

    /// A measured daily volume is the span's rate as if the workload ran all day, every day:
    /// from a short span at the simulator's full speed that is far beyond any real use, and
    /// the lifetime it gives means nothing. Said next to the figure, with the fix.
    pub fn measured_rate_warning(&self) -> Option<String> {
        // Assumption: an hour of simulated time, or more than 10 drive writes a day (above
        // every preset's rated DWPD), marks a rate no real day keeps.
        const SPAN_NS_MIN: u64 = 3_600_000_000_000;
        const DRIVE_WRITES_PER_DAY_MAX: f64 = 10.0;
        let implausible = self.span_ns < SPAN_NS_MIN || self.drive_writes_per_day > DRIVE_WRITES_PER_DAY_MAX;
        (self.daily_host_bytes_from == "measured" && implausible).then(|| {
            format!(
                "warning: the daily volume is this {:.3} s run's rate kept up all day, {:.1} drive writes a day, not a real day's use: set [device] daily_host_bytes to your own daily volume for a lifetime that means something (docs/lifetime.md)",
                self.span_ns as f64 / 1e9,
                self.drive_writes_per_day
            )
        })
    }
}
