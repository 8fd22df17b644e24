//! Other tools' workloads as trimlab runs them: Filebench workload models and `strace -f -ttt`
//! traces, each read with its own limits (hostile input arrives here) and replayed on a
//! `trimlab-fs` file system. They change when those tools do, so they live apart from our own
//! workload kinds; `trimlab-workload`'s `filebench` and `strace` kinds call them.

pub mod filebench;
pub mod input;
pub mod space;
pub mod strace;
