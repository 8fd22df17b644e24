//! A progress bar on a terminal, silence otherwise.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    /// A bar of 1000 steps labelled `label`, shown only when stderr is a terminal.
    pub fn new(label: &str) -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar { bar: None };
        }
        let bar = ProgressBar::new(1000);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>24} [{bar:40}] {percent:>3}% {elapsed}")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        Bar { bar: Some(bar) }
    }

    /// Sets the position, in 0..=1000; callable from several threads.
    pub fn set(&self, permille: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(permille.min(1000));
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl trimlab_workload::Progress for Bar {
    fn update(&mut self, permille: u64) {
        self.set(permille);
    }
}
