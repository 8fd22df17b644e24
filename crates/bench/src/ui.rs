//! Where the bench's rows and progress go: the adapter's terminal, behind two traits.

use trimlab_workload::Progress as RunProgress;

/// Where the bench's rows and progress go: the terminal, for the CLI.
pub trait Ui {
    /// One line of the tables, printed as soon as it is measured.
    fn line(&mut self, text: &str);
    /// A progress display for a case's precondition and measured phase.
    fn progress(&mut self, label: &str) -> Box<dyn BenchProgress>;
}

/// A case's progress display: the workload's progress, plus its end.
pub trait BenchProgress: RunProgress {
    fn finish(&mut self);
}
