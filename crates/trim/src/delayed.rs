//! Delayed TRIM (002): a TRIM does step 1 only (append its ranges to the trim buffer, set their
//! bits in the trim-validity bitmap) and completes; steps 2 and 3 run later, while the device is
//! idle, in bounded chunks that a host command pauses. Before a GC, pending TRIMs are applied
//! first, up to a cap per busy period, so GC does not copy pages the host already freed.
//!
//! Interpretation of the cap (002 names DT-512MB, DT-1GB and DT-ALL by "the amount of TRIM
//! performed before GC" without saying per what): a budget of pages that forced pre-GC work may
//! consume between two idle periods; it refills when the device goes idle. Per GC invocation
//! the cap would drain any backlog within a few invocations and the configurations could not
//! differ in WAF as 002's Fig. 2 shows they do.

use crate::cost_model::TrimCostModel;
pub use crate::delayed_config::{BeforeGcCap, DelayedConfig};
use crate::engine::{Controller, EngineKind, EngineSpec, Figure, PageRange, TrimEngine, TrimStats, TrimSteps};
use crate::engine_keys::EngineSection;
use crate::trim_bitmap::TrimBitmap;
use crate::trim_buffer::TrimBuffer;
use trimlab_ftl::{Ftl, Lpn};
use trimlab_sim::SimTime;

/// Pages a drain takes from the trim buffer at a time (see `DelayedTrim::drain`).
const DRAIN_CHUNK: usize = 16;

impl EngineKind {
    #[allow(non_upper_case_globals)]
    pub const Delayed: EngineKind = EngineKind("delayed");
}

pub const SPEC: EngineSpec = EngineSpec {
    kind: EngineKind::Delayed,
    help: "Delayed TRIM: step 1 now, steps 2-3 at idle or before GC ([trim.delayed])",
    keys: Some(EngineSection::of::<DelayedConfig>()),
    figures: &FIGURES,
    build: |i| {
        let keys = i.keys("trim.delayed");
        Box::new(DelayedTrim::new(i.cost, &keys, i.logical_pages, i.unit_bytes))
    },
};

/// The report's figures of deferred work ([`DeferredStats`]), in the order reports have always
/// listed them.
const FIGURES: [Figure; 17] = [
    Figure::count("idle_step2_ns").in_every_report(),
    Figure::count("idle_step3_ns").in_every_report(),
    Figure::count("idle_total_ns").in_every_report(),
    Figure::count("before_gc_ns").in_every_report(),
    Figure::count("buffer_full_ns").in_every_report(),
    Figure::count("idle_chunks").in_every_report(),
    Figure::count("idle_preemptions").in_every_report(),
    Figure::count("before_gc_drains").in_every_report(),
    Figure::count("before_gc_capped").in_every_report(),
    Figure::count("buffer_full_drains").in_every_report(),
    Figure::count("pages_applied").in_every_report(),
    Figure::count("pages_rewritten").in_every_report(),
    Figure::gauge("pages_pending").in_every_report(),
    Figure::gauge("trim_buffer_entries").in_every_report(),
    Figure::gauge("trim_buffer_entries_max").in_every_report(),
    Figure::gauge("bitmap_bytes").in_every_report(),
    Figure::gauge("bitmap_bytes_max").in_every_report(),
];

/// What the engine did with the work it put off, and where that work ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeferredStats {
    /// Steps 2 and 3 done while the device was idle: no host command waited for them.
    pub idle: TrimSteps,
    /// Steps 2 and 3 forced before a GC (host commands wait; part of `foreground`).
    pub before_gc: TrimSteps,
    /// Steps 2 and 3 forced because the trim buffer was full (part of `foreground`).
    pub buffer_full: TrimSteps,
    pub idle_chunks: u64,
    /// Idle drains that stopped with work left because a host command arrived.
    pub idle_preemptions: u64,
    /// GCs that first applied pending TRIMs.
    pub before_gc_drains: u64,
    /// GCs that met pending TRIMs but had used up the pre-GC budget.
    pub before_gc_capped: u64,
    pub buffer_full_drains: u64,
    /// Pending pages whose deferred steps 2 and 3 ran.
    pub pages_applied: u64,
    /// Pending pages a later host write took back before the drain reached them.
    pub pages_rewritten: u64,
    /// Gauges at the time of the report.
    pub pages_pending: u64,
    pub trim_buffer_entries: u64,
    pub trim_buffer_entries_max: u64,
    pub bitmap_bytes: u64,
    pub bitmap_bytes_max: u64,
}

/// Where a drain's time goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drain {
    Idle,
    BeforeGc,
    BufferFull,
}

pub struct DelayedTrim {
    cost: TrimCostModel,
    bitmap: TrimBitmap,
    buffer: TrimBuffer,
    cap_pages: Option<u64>,
    /// Pages pre-GC work may still take before the next idle period (None: no cap).
    gc_budget_pages: Option<u64>,
    idle_chunk_pages: u64,
    stats: TrimStats,
    deferred: DeferredStats,
    /// The trim buffer and bitmap as of the last host FLUSH: what survives a power cut.
    persisted: (TrimBitmap, TrimBuffer),
    /// Whether the buffer or bitmap changed since they were persisted.
    changed_since_flush: bool,
}

impl DelayedTrim {
    pub fn new(cost: TrimCostModel, config: &DelayedConfig, logical_pages: u32, unit_bytes: u64) -> Self {
        let cap_pages = match config.before_gc {
            BeforeGcCap::All => None,
            BeforeGcCap::Bytes(b) => Some(b / unit_bytes),
        };
        let bitmap = TrimBitmap::new(config.bitmap, logical_pages, config.partial_region_pages);
        let buffer = TrimBuffer::new(config.trim_buffer_entries as usize);
        let mut engine = DelayedTrim {
            cost,
            persisted: (bitmap.clone(), buffer.clone()),
            changed_since_flush: false,
            bitmap,
            buffer,
            cap_pages,
            gc_budget_pages: cap_pages,
            idle_chunk_pages: config.idle_chunk_pages as u64,
            stats: TrimStats::default(),
            deferred: DeferredStats::default(),
        };
        engine.refresh_gauges();
        engine
    }

    pub fn pending_pages(&self) -> u64 {
        self.bitmap.set_count()
    }

    pub fn deferred(&self) -> &DeferredStats {
        &self.deferred
    }

    fn refresh_gauges(&mut self) {
        let d = &mut self.deferred;
        d.pages_pending = self.bitmap.set_count();
        d.trim_buffer_entries = self.buffer.len() as u64;
        d.trim_buffer_entries_max = d.trim_buffer_entries_max.max(d.trim_buffer_entries);
        d.bitmap_bytes = self.bitmap.heap_bytes();
        d.bitmap_bytes_max = d.bitmap_bytes_max.max(d.bitmap_bytes);
    }

    /// Runs steps 2 and 3 for up to `max_pages` trim-buffer pages, oldest first. A page whose
    /// bit is clear was rewritten since (or drained through an overlapping earlier entry) and is
    /// skipped. Returns the controller time and the pages taken from the buffer.
    fn drain(&mut self, max_pages: u64, ctl: &mut Controller<'_>, kind: Drain) -> (TrimSteps, u64) {
        let buffered = ctl.buffer.is_enabled();
        let mut steps = TrimSteps::default();
        let (mut taken, mut applied, mut unmapped, mut dropped) = (0u64, 0u64, 0u64, 0u64);
        // Pages are taken a chunk at a time and their bitmap words, write-buffer slots and map
        // entries prefetched together: each is a random miss, and one page after another they
        // did not overlap (the pages are applied in the same order, and applying one never
        // touches the buffer).
        let mut chunk = [Lpn(0); DRAIN_CHUNK];
        while taken < max_pages {
            let want = (max_pages - taken).min(DRAIN_CHUNK as u64) as usize;
            let got = self.buffer.pop_pages(&mut chunk[..want]);
            for &lpn in &chunk[..got] {
                self.bitmap.prefetch(lpn.0);
                ctl.buffer.prefetch(lpn);
                ctl.ftl.prefetch_map(lpn);
            }
            for &lpn in &chunk[..got] {
                taken += 1;
                steps.step3_ns += self.cost.bitmap_check_ns;
                if !self.bitmap.clear(lpn.0) {
                    continue;
                }
                applied += 1;
                if buffered && ctl.buffer.discard(lpn) {
                    dropped += 1;
                }
                let mapped = ctl.ftl.trim(ctl.now, lpn, 1) > 0;
                unmapped += mapped as u64;
                let (s2, s3) = self.cost.steps23_ns(buffered, mapped);
                steps.step2_ns += s2;
                steps.step3_ns += s3;
            }
            if got < want {
                break;
            }
        }
        self.changed_since_flush |= taken > 0;
        let s = &mut self.stats;
        s.pages_unmapped += unmapped;
        s.buffer_pages_dropped += dropped;
        self.deferred.pages_applied += applied;
        let sink = match kind {
            Drain::Idle => &mut self.deferred.idle,
            Drain::BeforeGc => &mut self.deferred.before_gc,
            Drain::BufferFull => &mut self.deferred.buffer_full,
        };
        *sink += steps;
        if kind != Drain::Idle {
            s.foreground += steps;
        }
        self.refresh_gauges();
        (steps, taken)
    }
}

impl TrimEngine for DelayedTrim {
    fn name(&self) -> &'static str {
        SPEC.kind.name()
    }

    fn trim(&mut self, ranges: &[PageRange], mut ctl: Controller<'_>) -> TrimSteps {
        let mut steps = TrimSteps::default();
        if self.buffer.room() < ranges.len() {
            // No room to defer: apply the oldest entries now, in the foreground.
            self.deferred.buffer_full_drains += 1;
            while self.buffer.room() < ranges.len() {
                let front = self.buffer.ranges().next().map_or(0, |r| r.count as u64);
                let (forced, _) = self.drain(front, &mut ctl, Drain::BufferFull);
                steps += forced;
            }
        }
        let mut step1 =
            self.cost.step1_ns(ranges.len()) + self.cost.trim_buffer_append_ns * ranges.len() as u64;
        let mut pages = 0u64;
        for range in ranges {
            let (_, words) = self.bitmap.set_range(range.start.0, range.count);
            step1 += words * self.cost.bitmap_word_ns;
            pages += range.count as u64;
            self.buffer.push(*range);
        }
        steps.step1_ns += step1;
        self.changed_since_flush = true;
        let s = &mut self.stats;
        s.commands += 1;
        s.ranges += ranges.len() as u64;
        s.pages_requested += pages;
        s.foreground.step1_ns += step1;
        self.refresh_gauges();
        steps
    }

    #[inline]
    fn on_write(&mut self, lpn: Lpn) {
        if self.bitmap.set_count() != 0 && self.bitmap.clear(lpn.0) {
            self.changed_since_flush = true;
            self.deferred.pages_rewritten += 1;
            self.refresh_gauges();
        }
    }

    #[inline]
    fn reads_as_trimmed(&self, lpn: Lpn) -> bool {
        self.bitmap.set_count() != 0 && self.bitmap.test(lpn.0)
    }

    fn on_idle(&mut self, from: SimTime, until: SimTime, mut ctl: Controller<'_>) -> SimTime {
        self.gc_budget_pages = self.cap_pages;
        let mut now = from;
        while now < until && !self.buffer.is_empty() {
            let (steps, _) = self.drain(self.idle_chunk_pages, &mut ctl, Drain::Idle);
            self.deferred.idle_chunks += 1;
            now = now.after(steps.total_ns());
        }
        if !self.buffer.is_empty() {
            self.deferred.idle_preemptions += 1;
        }
        now
    }

    fn before_gc(&mut self, now: SimTime, mut ctl: Controller<'_>) -> SimTime {
        if self.buffer.is_empty() {
            return now;
        }
        let allowed = self.gc_budget_pages.unwrap_or(u64::MAX);
        if allowed == 0 {
            self.deferred.before_gc_capped += 1;
            return now;
        }
        self.deferred.before_gc_drains += 1;
        let (steps, taken) = self.drain(allowed, &mut ctl, Drain::BeforeGc);
        if let Some(budget) = self.gc_budget_pages.as_mut() {
            *budget -= taken;
        }
        now.after(steps.total_ns())
    }

    fn stats(&self) -> &TrimStats {
        &self.stats
    }

    fn figures(&self) -> Vec<(&'static str, u64)> {
        let d = &self.deferred;
        let values = [
            d.idle.step2_ns,
            d.idle.step3_ns,
            d.idle.total_ns(),
            d.before_gc.total_ns(),
            d.buffer_full.total_ns(),
            d.idle_chunks,
            d.idle_preemptions,
            d.before_gc_drains,
            d.before_gc_capped,
            d.buffer_full_drains,
            d.pages_applied,
            d.pages_rewritten,
            d.pages_pending,
            d.trim_buffer_entries,
            d.trim_buffer_entries_max,
            d.bitmap_bytes,
            d.bitmap_bytes_max,
        ];
        FIGURES.iter().map(|f| f.key).zip(values).collect()
    }

    /// The trim bitmap and 8 bytes per trim-buffer entry.
    fn heap_bytes(&self) -> usize {
        (self.deferred.bitmap_bytes + self.deferred.trim_buffer_entries * 8) as usize
    }

    /// What Delayed TRIM persists so that trimmed data never comes back: the pending set
    /// itself (trim buffer and bitmap) at every FLUSH. The maps still hold a pending page, so
    /// losing its bit would resurrect the old data; persisting only the buffer would not do
    /// either, since a rewrite after the TRIM clears the bit and a replayed buffer would trim
    /// the newer data. Cost: the model charges no time (assumption: the few entries ride with
    /// the flush's own metadata write); only the copy is kept, and only after a change.
    fn on_flush(&mut self) {
        if self.changed_since_flush {
            self.persisted = (self.bitmap.clone(), self.buffer.clone());
            self.changed_since_flush = false;
        }
    }

    /// Back to the state of the last FLUSH: TRIMs since then are forgotten (their pages keep
    /// the data the maps hold, which the host may see again: it never flushed the TRIM), and
    /// pages rewritten since then are pending again (the rewrite was not flushed either).
    fn power_cut(&mut self, retrimmed: &mut Vec<Lpn>) {
        let (bitmap, buffer) = self.persisted.clone();
        retrimmed.extend(bitmap.pending_pages().into_iter().filter(|&p| !self.bitmap.test(p)).map(Lpn));
        self.bitmap = bitmap;
        self.buffer = buffer;
        self.changed_since_flush = false;
        self.refresh_gauges();
    }

    /// D1: the bitmap is self-consistent. D2: every pending page is named by an entry still in
    /// the trim buffer, so some drain will apply it. D3: the buffer holds no more entries than
    /// its capacity and at least as many pages as are pending.
    fn check(&self, _ftl: &dyn Ftl) -> Result<(), String> {
        self.bitmap.check()?;
        if self.buffer.len() > self.buffer.capacity_entries() {
            return Err(format!(
                "delayed D3: {} trim-buffer entries exceed the capacity {}",
                self.buffer.len(),
                self.buffer.capacity_entries()
            ));
        }
        if self.buffer.pages() < self.bitmap.set_count() {
            return Err(format!(
                "delayed D3: {} pages pending but the trim buffer names only {}",
                self.bitmap.set_count(),
                self.buffer.pages()
            ));
        }
        if self.bitmap.set_count() == 0 {
            return Ok(());
        }
        let mut spans: Vec<(u32, u32)> =
            self.buffer.ranges().map(|r| (r.start.0, r.start.0 + r.count)).collect();
        spans.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(spans.len());
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        for page in self.bitmap.pending_pages() {
            let i = merged.partition_point(|&(s, _)| s <= page);
            if i == 0 || merged[i - 1].1 <= page {
                return Err(format!("delayed D2: page {page} is pending but no trim-buffer entry names it"));
            }
        }
        Ok(())
    }
}
