//! Runs a [`Model`] on a mounted file system: the filesets' directories and preallocated
//! files first (`fileset_create`), then every threadflow's flowop loop, interleaved in
//! simulated time: the thread that has waited longest (ties: the one queued first) runs its
//! next flowop, so threads take turns round-robin and a `delay` or `eventlimit` puts one
//! aside until its time. One file system is one application clock, so flowops do not
//! overlap; each costs what its system calls cost in the fs model.

use super::fileset::Fileset;
use super::model::{FlowopDef, FlowopKind, Mode, Model};
use super::FilebenchError;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError, Ino};
use trimlab_sim::{SimRng, SimTime};

/// What a run did: per flowop kind the times it ran (Filebench's per-flowop op counts).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub counts: BTreeMap<FlowopKind, u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub prealloc_files: u64,
    pub prealloc_bytes: u64,
    /// Simulated time of the flowop loops (after preallocation).
    pub run_ns: u64,
    /// Simulated time the I/O flowops took, summed (Filebench's fs_total_lat of its
    /// FLOW_TYPE_IO flowops, the numerator of its IO Summary's ms/op).
    pub io_latency_ns: u64,
    /// `deletefile` left a file alone because another thread had it open (Filebench's
    /// "can't delete file opened by other threads").
    pub deletes_skipped: u64,
    /// In the default (timed) mode, the line of the flowop that found no file and stopped the
    /// run early, as Filebench's "Run stopped early ... could not obtain a file" (0: ran its time).
    pub stopped_early_line: u64,
}

/// One open descriptor of a thread.
#[derive(Clone, Copy, Debug)]
struct Fd {
    set: usize,
    entry: u32,
    ino: Ino,
    offset: u64,
}

/// What a flowop did to its thread.
enum Step {
    Next,
    /// Sleep until then (delay, eventlimit).
    Wait(SimTime),
    /// FILEBENCH_NORSC: no file to pick, or a finish flowop's limit reached.
    NoResource,
}

/// The run's state: filesets, each thread's descriptors, the counts finish flowops read.
struct Engine<'m> {
    model: &'m Model,
    origin: &'m str,
    sets: Vec<Fileset>,
    fds: Vec<BTreeMap<usize, Fd>>,
    /// Per flowop name: (times run, bytes moved), for finishoncount / finishonbytes targets.
    by_name: BTreeMap<String, (u64, u64)>,
    next_event: SimTime,
    out: Outcome,
}

/// Prepares the filesets and runs the model; `rng` draws sizes, the tree and prealloc.
pub fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    model: &Model,
    origin: &str,
    rng: &mut SimRng,
) -> Result<Outcome, FilebenchError> {
    let sets = model
        .filesets
        .iter()
        .map(|d| Fileset::populate(d, rng).map_err(|m| FilebenchError::new(origin, d.line, &d.name, m)))
        .collect::<Result<_, _>>()?;
    let mut e = Engine {
        model,
        origin,
        sets,
        fds: Vec::new(),
        by_name: BTreeMap::new(),
        next_event: fs.now(),
        out: Outcome::default(),
    };
    e.create_filesets(fs, rng)?;
    let start = fs.now();
    e.next_event = start;
    e.schedule(fs, rng)?;
    e.out.run_ns = fs.now().since(start);
    Ok(e.out)
}

impl Engine<'_> {
    fn err(&self, line: usize, text: &str, message: impl Into<String>) -> FilebenchError {
        FilebenchError::new(self.origin, line, text, message)
    }

    /// `fileset_create`: every directory, then the preallocated files written whole in
    /// FILE_ALLOC_BLOCK (1 MiB) writes.
    fn create_filesets<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
    ) -> Result<(), FilebenchError> {
        for i in 0..self.sets.len() {
            let def = &self.model.filesets[i];
            let fail = |e: FsError| {
                FilebenchError::new(
                    self.origin,
                    def.line,
                    &format!("define fileset name={}", def.name),
                    format!("creating the fileset: {e}"),
                )
            };
            for d in self.sets[i].dirs.clone() {
                fs.mkdir(&d).map_err(fail)?;
            }
            for index in self.sets[i].prealloc_order(def.prealloc_percent, rng) {
                let entry = &self.sets[i].entries[index as usize];
                let (path, size) = (entry.path.clone(), entry.size);
                let ino = fs.create(&path).map_err(fail)?;
                write_pieces(fs, ino, 0, size, 1 << 20).map_err(fail)?;
                self.sets[i].set_exists(index, true);
                self.out.prealloc_files += 1;
                self.out.prealloc_bytes += size;
            }
        }
        Ok(())
    }

    /// The flowop loops until the run's time is up or its mode ends it.
    fn schedule<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
    ) -> Result<(), FilebenchError> {
        let mut threads = Vec::new();
        for (t, def) in self.model.threads.iter().enumerate() {
            threads.extend((0..def.instances).map(|_| (t, 0usize)));
        }
        self.fds = vec![BTreeMap::new(); threads.len()];
        let end = self.model.runtime_s.map(|s| fs.now().after(s.saturating_mul(1_000_000_000)));
        let mut queue: BTreeSet<(SimTime, u64, usize)> =
            (0..threads.len()).map(|i| (fs.now(), i as u64, i)).collect();
        let mut seq = threads.len() as u64;
        // A loop of flowops that cost no simulated time would never reach the run's end.
        let (mut still, still_max) = (
            0u64,
            64 + 4
                * self.model.threads.iter().map(|t| t.flowops.len() as u64).sum::<u64>()
                * threads.len() as u64,
        );
        while let Some((at, _, i)) = queue.pop_first() {
            if end.is_some_and(|e| at.max(fs.now()) >= e) {
                fs.idle_until(end.unwrap_or(at));
                return Ok(());
            }
            fs.idle_until(at);
            let (t, pc) = threads[i];
            let op = &self.model.threads[t].flowops[pc];
            let before = fs.now();
            let step = self.flowop(fs, rng, i, op)?;
            threads[i].1 = (pc + 1) % self.model.threads[t].flowops.len();
            // A wait for now (`delay value=0`, an event already due) moves no time either.
            let waits = matches!(step, Step::Wait(until) if until > fs.now());
            still = if fs.now() == before && !waits { still + 1 } else { 0 };
            if still > still_max {
                return Err(self.err(op.line, &op.text, "the threads' flowops advance no simulated time (no file-system call, no delay): the run would never end"));
            }
            match step {
                Step::Next => queue.insert((fs.now(), seq, i)),
                Step::Wait(until) => queue.insert((until, seq, i)),
                Step::NoResource => match self.model.mode {
                    Mode::Timeout => {
                        self.out.stopped_early_line = op.line as u64;
                        return Ok(());
                    }
                    Mode::FirstDone => return Ok(()),
                    Mode::AllDone => false,
                },
            };
            seq += 1;
        }
        Ok(())
    }

    /// Runs one flowop `iters` times for thread `i`.
    fn flowop<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Step, FilebenchError> {
        let mut step = Step::Next;
        for _ in 0..op.iters {
            let (bytes0, start) = (self.out.bytes_read + self.out.bytes_written, fs.now());
            step = match op.kind {
                FlowopKind::CreateFile | FlowopKind::OpenFile => {
                    let opened = self.open(fs, i, op, op.kind == FlowopKind::CreateFile)?;
                    if matches!(opened, Step::Next) {
                        self.count(op);
                    }
                    opened
                }
                FlowopKind::CloseFile => self.close(fs, i, op)?,
                FlowopKind::DeleteFile => self.delete(fs, i, op)?,
                FlowopKind::StatFile => self.stat(fs, i, op)?,
                FlowopKind::Fsync | FlowopKind::FsyncSet => self.fsync(fs, i, op)?,
                FlowopKind::Delay | FlowopKind::EventLimit | FlowopKind::OpsLimit => self.pace(fs, rng, op),
                FlowopKind::FinishOnCount | FlowopKind::FinishOnBytes => self.finish(rng, op),
                _ => self.io(fs, rng, i, op)?,
            };
            if matches!(step, Step::NoResource) {
                return Ok(step);
            }
            if is_io(op.kind) {
                self.out.io_latency_ns += fs.now().since(start);
            }
            let moved = self.out.bytes_read + self.out.bytes_written - bytes0;
            let n = self.by_name.entry(op.name.clone()).or_default();
            n.0 += 1;
            n.1 += moved;
        }
        Ok(step)
    }

    /// Counts one run of `op`'s kind (Filebench's flowop_endop).
    fn count(&mut self, op: &FlowopDef) {
        *self.out.counts.entry(op.kind).or_default() += 1;
    }

    /// createfile (a not-existing entry) or openfile (an existing one) on descriptor `op.fd`
    /// (the caller counts it: an I/O flowop's implicit open counts under the I/O flowop).
    fn open<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        i: usize,
        op: &FlowopDef,
        create: bool,
    ) -> Result<Step, FilebenchError> {
        if self.fds[i].contains_key(&op.fd) {
            let what = if create { "create" } else { "open" };
            return Err(self.err(
                op.line,
                &op.text,
                format!("attempted to {what} without closing fd {} (Filebench stops here too)", op.fd),
            ));
        }
        let set = op.fileset.ok_or_else(|| self.err(op.line, &op.text, "needs filesetname="))?;
        let Some(entry) = self.sets[set].pick(!create) else { return Ok(Step::NoResource) };
        let path = self.sets[set].entries[entry as usize].path.clone();
        let ino = match create {
            true => fs.create(&path),
            false => {
                syscall(fs);
                fs.lookup(&path).ok_or_else(|| FsError::NotFound(path.clone()))
            }
        }
        .map_err(|e| self.err(op.line, &op.text, e.to_string()))?;
        self.sets[set].set_exists(entry, true);
        self.sets[set].entries[entry as usize].open_count += 1;
        self.fds[i].insert(op.fd, Fd { set, entry, ino, offset: 0 });
        Ok(Step::Next)
    }

    fn close<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Step, FilebenchError> {
        let fd = self.fds[i].remove(&op.fd).ok_or_else(|| {
            self.err(op.line, &op.text, format!("closefile of fd {}, which is not open", op.fd))
        })?;
        let e = &mut self.sets[fd.set].entries[fd.entry as usize];
        e.open_count = e.open_count.saturating_sub(1);
        syscall(fs);
        self.count(op);
        Ok(Step::Next)
    }

    /// deletefile: the descriptor's file (fd > 0 and open), or an existing entry; a file
    /// another thread has open is left alone.
    fn delete<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Step, FilebenchError> {
        let own = if op.fd > 0 { self.fds[i].remove(&op.fd) } else { None };
        let (set, entry, mine) = match own {
            Some(fd) => (fd.set, fd.entry, 1),
            None => {
                let set = op
                    .fileset
                    .ok_or_else(|| self.err(op.line, &op.text, "needs filesetname= (or an open fd=)"))?;
                match self.sets[set].pick(true) {
                    Some(entry) => (set, entry, 0),
                    None => return Ok(Step::NoResource),
                }
            }
        };
        let e = &mut self.sets[set].entries[entry as usize];
        if e.open_count > mine {
            if mine == 1 {
                e.open_count -= 1;
            }
            self.out.deletes_skipped += 1;
            return Ok(Step::Next);
        }
        e.open_count = 0;
        let path = e.path.clone();
        fs.unlink(&path).map_err(|e| self.err(op.line, &op.text, e.to_string()))?;
        self.sets[set].set_exists(entry, false);
        self.count(op);
        Ok(Step::Next)
    }

    fn stat<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Step, FilebenchError> {
        if op.fd == 0 || !self.fds[i].contains_key(&op.fd) {
            let set = op
                .fileset
                .ok_or_else(|| self.err(op.line, &op.text, "needs filesetname= (or an open fd=)"))?;
            if self.sets[set].pick(true).is_none() {
                return Ok(Step::NoResource);
            }
        }
        syscall(fs);
        self.count(op);
        Ok(Step::Next)
    }

    /// fsync of the descriptor, or fsyncset: of every descriptor open on the fileset.
    fn fsync<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Step, FilebenchError> {
        let inos: Vec<Ino> = match op.kind {
            FlowopKind::Fsync => {
                let fd = self.fds[i].get(&op.fd).ok_or_else(|| {
                    self.err(op.line, &op.text, format!("fsync of fd {}, which is not open", op.fd))
                })?;
                vec![fd.ino]
            }
            _ => self.fds[i].values().filter(|f| Some(f.set) == op.fileset).map(|f| f.ino).collect(),
        };
        for ino in inos {
            fs.fsync(ino).map_err(|e| self.err(op.line, &op.text, e.to_string()))?;
            self.count(op);
        }
        Ok(Step::Next)
    }

    /// delay, eventlimit, opslimit.
    fn pace<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, rng: &mut SimRng, op: &FlowopDef) -> Step {
        self.count(op);
        match (op.kind, self.model.eventgen_rate) {
            (FlowopKind::Delay, _) => {
                let s = op.value.as_ref().map_or(0, |v| v.draw(rng));
                Step::Wait(fs.now().after(s.saturating_mul(1_000_000_000)))
            }
            (FlowopKind::EventLimit, Some(rate)) => {
                let at = self.next_event.max(fs.now());
                self.next_event = at.after(1_000_000_000 / rate.max(1));
                Step::Wait(at)
            }
            // opslimit under eventgen would hold the flowops' rate to the events'; one
            // event per pass of the loop is what it comes to for a loop of one I/O flowop.
            (FlowopKind::OpsLimit, Some(rate)) => {
                let at = self.next_event.max(fs.now());
                self.next_event = at.after(1_000_000_000 / rate.max(1));
                Step::Wait(at)
            }
            _ => Step::Next,
        }
    }

    /// finishoncount / finishonbytes: the target's (or every flowop's) count or bytes.
    fn finish(&mut self, rng: &mut SimRng, op: &FlowopDef) -> Step {
        let limit = op.value.as_ref().map_or(0, |v| v.draw(rng));
        let pick = |c: &(u64, u64)| if op.kind == FlowopKind::FinishOnCount { c.0 } else { c.1 };
        let done = match &op.target {
            Some(t) => self.by_name.get(t).map_or(0, pick),
            None if op.kind == FlowopKind::FinishOnCount => {
                self.out.counts.iter().filter(|(k, _)| is_io(**k)).map(|(_, n)| n).sum()
            }
            None => self.out.bytes_read + self.out.bytes_written,
        };
        self.count(op);
        if done >= limit {
            Step::NoResource
        } else {
            Step::Next
        }
    }
}

/// The flowops Filebench counts as I/O (FLOW_TYPE_IO), which finishoncount counts without a target.
fn is_io(k: FlowopKind) -> bool {
    !matches!(
        k,
        FlowopKind::Delay
            | FlowopKind::EventLimit
            | FlowopKind::OpsLimit
            | FlowopKind::FinishOnCount
            | FlowopKind::FinishOnBytes
    )
}

/// One system call that the fs model has no call for (open, close, stat): its cost only.
fn syscall<D: BlockDevice>(fs: &mut FileSystem<D>) {
    let t = fs.now().after(fs.config().host.syscall_ns);
    fs.idle_until(t);
}

/// The calls that move `[offset, offset + bytes)` in `piece`-byte pieces: `(offset, length)`
/// of each, the last one short.
fn pieces(offset: u64, bytes: u64, piece: u64) -> impl Iterator<Item = (u64, u64)> {
    let end = offset + bytes;
    let step = piece.max(1);
    (offset..end).step_by(step as usize).map(move |at| (at, step.min(end - at)))
}

/// Buffered writes of `[offset, offset + bytes)` in `piece`-byte calls.
fn write_pieces<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    ino: Ino,
    offset: u64,
    bytes: u64,
    piece: u64,
) -> Result<(), FsError> {
    crate::space::check_fits(fs, ino, offset, bytes)?;
    pieces(offset, bytes, piece).try_for_each(|(at, n)| fs.write(ino, at, n).map(drop))
}

impl Engine<'_> {
    /// The descriptor an I/O flowop uses, opened from its fileset if it is not open yet
    /// (`flowoplib_filesetup`).
    fn setup<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Option<Fd>, FilebenchError> {
        if let Some(fd) = self.fds[i].get(&op.fd) {
            return Ok(Some(*fd));
        }
        if op.fileset.is_none() {
            return Err(self.err(
                op.line,
                &op.text,
                format!("fd {} is not open and the flowop names no filesetname=", op.fd),
            ));
        }
        match self.open(fs, i, op, false)? {
            Step::NoResource => Ok(None),
            _ => Ok(self.fds[i].get(&op.fd).copied()),
        }
    }

    /// The I/O flowops: writewholefile, readwholefile, appendfile, appendfilerand, read, write.
    fn io<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
        i: usize,
        op: &FlowopDef,
    ) -> Result<Step, FilebenchError> {
        let Some(mut fd) = self.setup(fs, i, op)? else { return Ok(Step::NoResource) };
        let writes = !matches!(op.kind, FlowopKind::ReadWholeFile | FlowopKind::Read);
        if writes && self.sets[fd.set].readonly {
            let name = &self.model.filesets[fd.set].name;
            return Err(self.err(
                op.line,
                &op.text,
                format!(
                    "fileset {name} is readonly: Filebench opens its files O_RDONLY, so this write fails"
                ),
            ));
        }
        let fail = |e: FsError| FilebenchError::new(self.origin, op.line, &op.text, e.to_string());
        let file_bytes = fs.file_size(fd.ino).unwrap_or(0);
        let entry_bytes = self.sets[fd.set].entries[fd.entry as usize].size;
        let iosize = op.iosize.as_ref().map_or(0, |a| a.draw(rng));
        let (read, write) = match op.kind {
            FlowopKind::WriteWholeFile => {
                let wss = match op.srcfd {
                    Some(s) => {
                        let src = self.fds[i]
                            .get(&s)
                            .ok_or_else(|| self.err(op.line, &op.text, format!("srcfd {s} is not open")))?;
                        self.sets[src.set].entries[src.entry as usize].size
                    }
                    None => entry_bytes,
                };
                write_pieces(fs, fd.ino, fd.offset, wss, if iosize == 0 { wss } else { iosize })
                    .map_err(fail)?;
                fd.offset += wss;
                (0, wss)
            }
            FlowopKind::ReadWholeFile => {
                read_pieces(fs, fd.ino, 0, file_bytes, if iosize == 0 { file_bytes } else { iosize })
                    .map_err(fail)?;
                fd.offset = file_bytes;
                (file_bytes, 0)
            }
            FlowopKind::AppendFile | FlowopKind::AppendFileRand => {
                // appendfilerand: fb_random64(iosize, round 1), uniform in [0, iosize - 1].
                let n = match op.kind {
                    FlowopKind::AppendFileRand => rng.gen_range(0..iosize.max(1)),
                    _ => iosize,
                };
                if n > 0 {
                    crate::space::check_fits(fs, fd.ino, file_bytes, n).map_err(fail)?;
                    fs.write(fd.ino, file_bytes, n).map_err(fail)?;
                }
                fd.offset = file_bytes + n;
                (0, n)
            }
            _ => self.rw(fs, rng, &mut fd, op, iosize, file_bytes, entry_bytes)?,
        };
        if op.dsync && write > 0 {
            fs.fsync(fd.ino).map_err(fail)?;
        }
        self.fds[i].insert(op.fd, fd);
        self.out.bytes_read += read;
        self.out.bytes_written += write;
        self.count(op);
        Ok(Step::Next)
    }

    /// read / write of iosize: at the descriptor's offset, or (random) at an iosize-aligned
    /// offset within the working set (`workingset=`, else the file).
    #[allow(clippy::too_many_arguments)]
    fn rw<D: BlockDevice>(
        &self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
        fd: &mut Fd,
        op: &FlowopDef,
        iosize: u64,
        file_bytes: u64,
        entry_bytes: u64,
    ) -> Result<(u64, u64), FilebenchError> {
        let fail = |e: FsError| self.err(op.line, &op.text, e.to_string());
        if iosize == 0 {
            return Err(self.err(
                op.line,
                &op.text,
                format!("flowop {} needs iosize= above 0", op.kind.name()),
            ));
        }
        let write = op.kind == FlowopKind::Write;
        let wss = op.workingset.as_ref().map_or(0, |w| w.draw(rng));
        let wss = if wss > 0 {
            wss
        } else if write {
            entry_bytes.max(file_bytes)
        } else {
            file_bytes
        };
        let offset = match op.random {
            true => rng.gen_range(0..=wss.saturating_sub(iosize) / iosize) * iosize,
            // A sequential read at the end starts over from 0, as Filebench's does.
            false if !write && fd.offset >= file_bytes => 0,
            false => fd.offset,
        };
        if write {
            // O_DIRECT needs block-aligned I/O; an unaligned one is written buffered here (Linux
            // would refuse it with EINVAL, which Filebench reports as a failed flowop).
            let bs = fs.config().block_bytes;
            crate::space::check_fits(fs, fd.ino, offset, iosize).map_err(fail)?;
            let done = match op.directio && offset.is_multiple_of(bs) && iosize.is_multiple_of(bs) {
                true => fs.write_direct(fd.ino, offset, iosize),
                false => fs.write(fd.ino, offset, iosize),
            };
            done.map_err(fail)?;
            fd.offset = offset + iosize;
            return Ok((0, iosize));
        }
        let n = iosize.min(file_bytes.saturating_sub(offset));
        fs.read(fd.ino, offset, n).map_err(fail)?;
        fd.offset = offset + n;
        Ok((n, 0))
    }
}

/// Reads `[offset, offset + bytes)` in `piece`-byte calls.
fn read_pieces<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    ino: Ino,
    offset: u64,
    bytes: u64,
    piece: u64,
) -> Result<(), FsError> {
    pieces(offset, bytes, piece).try_for_each(|(at, n)| fs.read(ino, at, n).map(drop))
}
