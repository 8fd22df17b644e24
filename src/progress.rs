//! Progress on stderr: a bar per phase on a terminal, one line per finished phase otherwise
//! (CI logs, `2> log`, pipes), so a long run never looks hung.
//!
//! Wall time appears only here, on stderr; it never reaches a result file.
// The binary is the edge: progress lines show wall-clock time.
#![allow(clippy::disallowed_methods)]

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

/// The phase in progress, for the line written when it ends.
struct Phase {
    name: String,
    started: Instant,
}

pub struct Bar {
    label: String,
    bar: Option<ProgressBar>,
    phase: Mutex<Option<Phase>>,
    /// Whether a finished phase gets its "done in" line off a terminal (a command that times
    /// itself as a whole, as advise does, prints one line at its end instead).
    done_lines: bool,
}

impl Bar {
    /// A bar of 1000 steps labelled `label` on a terminal; a line per phase otherwise.
    pub fn new(label: &str) -> Bar {
        Bar::with_terminal(label, std::io::stderr().is_terminal())
    }

    fn with_terminal(label: &str, terminal: bool) -> Bar {
        let bar = terminal.then(|| {
            let bar = ProgressBar::new(1000);
            bar.set_style(
                ProgressStyle::with_template("{prefix:>32} [{bar:40}] {percent:>3}% {elapsed}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            bar
        });
        Bar { label: label.to_string(), bar, phase: Mutex::new(None), done_lines: true }
    }

    /// Ends the current phase (its line, when not on a terminal) and starts `name` at 0 %.
    pub fn phase(&self, name: &str) {
        let mut phase = self.phase.lock().expect("no panic while holding the progress lock");
        if let Some(done) = phase.take() {
            self.phase_done(&done);
        }
        *phase = Some(Phase { name: name.to_string(), started: Instant::now() });
        if let Some(bar) = &self.bar {
            bar.set_prefix(format!("{}: {name}", self.label));
            bar.reset();
        }
    }

    /// Sets the position, in 0..=1000; callable from several threads.
    pub fn set(&self, permille: u64) {
        let permille = permille.min(1000);
        let mut phase = self.phase.lock().expect("no panic while holding the progress lock");
        // A caller that never names phases has one unnamed phase.
        phase.get_or_insert_with(|| Phase { name: String::new(), started: Instant::now() });
        if let Some(bar) = &self.bar {
            bar.set_position(permille);
        }
    }

    pub fn finish(&self) {
        if let Some(done) = self.phase.lock().expect("no panic while holding the progress lock").take() {
            self.phase_done(&done);
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn phase_done(&self, p: &Phase) {
        if self.bar.is_none() && self.done_lines {
            eprintln!("{}", self.line(p));
        }
    }

    fn line(&self, p: &Phase) -> String {
        // A phase ends when the next one starts or the bar finishes, so it ran to completion.
        let name = if p.name.is_empty() { String::new() } else { format!(" {}", p.name) };
        format!("trimlab {}:{name} done in {:.1} s", self.label, p.started.elapsed().as_secs_f64())
    }
}

impl trimlab_jobs::run::RunProgress for Bar {
    fn update(&mut self, permille: u64) {
        self.set(permille);
    }

    fn phase(&mut self, name: &str) {
        Bar::phase(self, name);
    }

    /// Rounds and steady-state status: above the bar on a terminal, a line otherwise.
    fn note(&mut self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("trimlab {}: {line}", self.label)),
            None => eprintln!("trimlab {}: {line}", self.label),
        }
    }
}

impl trimlab_jobs::bench::BenchProgress for Bar {
    fn finish(&mut self) {
        Bar::finish(self);
    }
}

/// Progress bars on the terminal for the experiments' worker pools (reproduce, advise).
pub struct Bars;

impl trimlab_jobs::reproduce::Progress for Bars {
    fn start(&self, label: &str) -> Box<dyn trimlab_jobs::reproduce::PhaseProgress + '_> {
        Box::new(Bar::new(label))
    }
}

impl trimlab_jobs::reproduce::PhaseProgress for Bar {
    fn set(&self, permille: u64) {
        Bar::set(self, permille);
    }
    fn finish(&self) {
        Bar::finish(self);
    }
}

/// Bars for a command that prints its own "done in" once, after its output (advise): a
/// worker pool's line would come before the report and time only the pool.
pub struct QuietBars;

impl trimlab_jobs::reproduce::Progress for QuietBars {
    fn start(&self, label: &str) -> Box<dyn trimlab_jobs::reproduce::PhaseProgress + '_> {
        Box::new(Bar { done_lines: false, ..Bar::new(label) })
    }
}

/// `trimlab bench`'s rows on stdout and its cases' bars on stderr.
pub struct BenchTerminal;

impl trimlab_jobs::bench::Ui for BenchTerminal {
    fn line(&mut self, text: &str) {
        println!("{text}");
    }
    fn progress(&mut self, label: &str) -> Box<dyn trimlab_jobs::bench::BenchProgress> {
        Box::new(Bar::new(label))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_lines_name_each_phase() {
        let bar = Bar::with_terminal("run", false);
        bar.phase("precondition fill");
        bar.set(1000);
        let line = bar.line(bar.phase.lock().unwrap().as_ref().unwrap());
        assert!(line.starts_with("trimlab run: precondition fill done in "), "{line}");
        bar.phase("measured");
        assert_eq!(bar.phase.lock().unwrap().as_ref().unwrap().name, "measured");
        bar.finish();
        assert!(bar.phase.lock().unwrap().is_none());
        let unnamed = Bar::with_terminal("advise", false);
        unnamed.set(500);
        let line = unnamed.line(unnamed.phase.lock().unwrap().as_ref().unwrap());
        assert!(line.starts_with("trimlab advise: done in "), "{line}");
    }
}
