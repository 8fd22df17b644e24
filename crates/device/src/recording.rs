//! A recording of the commands that reach a device, as fio iolog v3 (so `trimlab replay` can
//! run it under other configurations) with a `# phase NAME AT_US` comment line where each
//! phase starts (so `trimlab compare` can put a model run beside a kernel's, phase by phase).
//! `trimlab serve --record` and `trimlab run --record` write the same format. Timestamps are
//! whole microseconds; a TRIM of several ranges is one line per range, as serve records a
//! client's TRIM split at the device's limits.

use crate::command::Command;
use std::io::Write;
use trimlab_sim::SimTime;

pub struct Recording {
    out: Box<dyn Write + Send>,
    last_us: u64,
    /// The first write error: the recording stops there and [`Recording::finish`] reports it.
    error: Option<std::io::Error>,
}

impl Recording {
    /// The file name every line carries (fio's iolog names the file each action is on).
    pub const FILE: &'static str = "trimlab";

    /// Writes the header to `out`.
    pub fn start(mut out: Box<dyn Write + Send>) -> std::io::Result<Recording> {
        writeln!(out, "fio version 3 iolog")?;
        writeln!(out, "0 {} add", Self::FILE)?;
        writeln!(out, "0 {} open", Self::FILE)?;
        Ok(Recording { out, last_us: 0, error: None })
    }

    fn write(&mut self, line: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
        if self.error.is_none() {
            if let Err(e) = line(&mut self.out) {
                self.error = Some(e);
            }
        }
    }

    /// One command arriving at `at`.
    pub fn command(&mut self, at: SimTime, command: &Command) {
        let us = at.0 / 1000;
        self.last_us = self.last_us.max(us);
        let f = Self::FILE;
        self.write(|out| match command {
            Command::Read { offset, bytes } => writeln!(out, "{us} {f} read {offset} {bytes}"),
            Command::Write { offset, bytes, .. } => writeln!(out, "{us} {f} write {offset} {bytes}"),
            Command::Trim { ranges } => {
                ranges.iter().try_for_each(|r| writeln!(out, "{us} {f} trim {} {}", r.offset, r.bytes))
            }
            Command::Flush => writeln!(out, "{us} {f} sync 0 0"),
        });
    }

    /// The start of phase `name` at `at` (blanks in the name become '_': one word).
    pub fn phase(&mut self, at: SimTime, name: &str) {
        let us = at.0 / 1000;
        self.last_us = self.last_us.max(us);
        let name: String = name.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect();
        self.write(|out| writeln!(out, "# phase {name} {us}"));
    }

    /// Whether a write has failed (the recording stopped there).
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Closes the recording; the first write error, if there was one.
    pub fn finish(mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        writeln!(self.out, "{} {} close", self.last_us, Self::FILE)?;
        self.out.flush()
    }
}
