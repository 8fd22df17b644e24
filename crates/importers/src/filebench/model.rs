//! A Filebench workload model once read: its filesets, its threads (each `define process` ×
//! `thread` instance is one Filebench threadflow), their flowop loops, the run mode and length.

use super::value::Amount;

/// The parsed model, its variables resolved.
#[derive(Clone, Debug)]
pub struct Model {
    pub filesets: Vec<FilesetDef>,
    pub threads: Vec<ThreadDef>,
    /// `run N` (seconds of simulated time); None: no limit (`run` without N in a `quit`
    /// mode, which ends when a flowop finds no file or a finish flowop says so).
    pub runtime_s: Option<u64>,
    pub mode: Mode,
    /// `eventgen rate=N`: events per second that `eventlimit` waits for (None: off, and
    /// `eventlimit` returns at once, as Filebench's does).
    pub eventgen_rate: Option<u64>,
    /// Constructs read but without effect on a simulated file system, for the run's notes.
    pub ignored: Vec<String>,
}

/// `set mode quit ...`: what ends the run besides its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The default: `run N` seconds; a flowop that finds no file stops the run early
    /// (Filebench: "Run stopped early ... could not obtain a file").
    Timeout,
    /// `set mode quit firstdone`: the first thread that finds no file (or finishes) ends it.
    FirstDone,
    /// `set mode quit alldone`: each such thread stops; the run ends when all have.
    AllDone,
}

/// `define fileset` or `define file` (a fileset of one file named as the set, no tree).
#[derive(Clone, Debug)]
pub struct FilesetDef {
    pub name: String,
    pub line: usize,
    pub entries: u64,
    /// Mean directory width; a random dirwidth's draws are each directory's width.
    pub dirwidth: Amount,
    /// `dirgamma` / 1000: the gamma shape of directory widths and depths (default 1.5; 0:
    /// every directory exactly `dirwidth` wide).
    pub dirgamma: f64,
    pub size: Amount,
    /// Percent of the entries created before the run (`prealloc` alone: 100).
    pub prealloc_percent: u64,
    pub readonly: bool,
    pub single_file: bool,
}

/// One threadflow: a thread of a process (instances already multiplied out).
#[derive(Clone, Debug)]
pub struct ThreadDef {
    /// `process/thread`, for messages.
    pub name: String,
    /// Process instances × thread instances: that many independent copies of the loop.
    pub instances: u64,
    pub flowops: Vec<FlowopDef>,
}

/// One `flowop` line.
#[derive(Clone, Debug)]
pub struct FlowopDef {
    pub line: usize,
    /// The line as written, for errors.
    pub text: String,
    pub name: String,
    pub kind: FlowopKind,
    /// Index into [`Model::filesets`] (`filesetname=`).
    pub fileset: Option<usize>,
    /// The descriptor slot (`fd=`; default 0, as Filebench's `flowoplib_fdnum`).
    pub fd: usize,
    pub srcfd: Option<usize>,
    pub iosize: Option<Amount>,
    /// `workingset=`: the part of the file random reads and writes fall in (0: the file).
    pub workingset: Option<Amount>,
    /// `value=`: delay seconds, finishoncount's count, finishonbytes' bytes.
    pub value: Option<Amount>,
    /// `target=`: the flowop whose count finishoncount / finishonbytes watch.
    pub target: Option<String>,
    pub iters: u64,
    pub dsync: bool,
    pub random: bool,
    pub directio: bool,
}

macro_rules! flowop_kinds {
    ($($variant:ident => $name:literal: $help:literal),* $(,)?) => {
        /// The flowops trimlab models.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum FlowopKind { $($variant),* }

        /// Every modelled flowop: its name in a model file and what the model does.
        pub const FLOWOPS: &[(FlowopKind, &str, &str)] = &[$((FlowopKind::$variant, $name, $help)),*];
    };
}

flowop_kinds! {
    CreateFile => "createfile": "creat(2) of an entry that does not exist yet (rotor over the set's non-existing entries)",
    OpenFile => "openfile": "open(2) of an existing entry (rotor over existing entries, skipping busy ones)",
    CloseFile => "closefile": "close(2) of the descriptor",
    DeleteFile => "deletefile": "unlink(2) of the descriptor's file or of an existing entry no thread has open",
    StatFile => "statfile": "stat(2) of the descriptor's file or of an existing entry",
    WriteWholeFile => "writewholefile": "writes the entry's size (of srcfd's file when given) in iosize pieces",
    ReadWholeFile => "readwholefile": "reads the file from 0 to its end in iosize pieces",
    AppendFile => "appendfile": "one write of iosize at the end",
    AppendFileRand => "appendfilerand": "one write at the end of a size uniform in [0, iosize - 1]",
    Read => "read": "a read of iosize: at the descriptor's offset (back to 0 at the end), or random with random",
    Write => "write": "a write of iosize: at the descriptor's offset, or random in the file with random",
    Fsync => "fsync": "fsync(2) of the descriptor",
    FsyncSet => "fsyncset": "fsync(2) of every descriptor of the thread open on the fileset",
    Delay => "delay": "the thread sleeps value seconds (simulated)",
    EventLimit => "eventlimit": "waits for the next event of eventgen rate=N (none without eventgen)",
    OpsLimit => "opslimit": "no effect without eventgen (as in Filebench)",
    FinishOnCount => "finishoncount": "ends the thread when target's (or all flowops') count reaches value",
    FinishOnBytes => "finishonbytes": "ends the thread when target's (or all flowops') bytes reach value",
}

impl FlowopKind {
    pub fn name(self) -> &'static str {
        FLOWOPS.iter().find(|f| f.0 == self).map_or("?", |f| f.1)
    }

    pub fn parse(name: &str) -> Option<FlowopKind> {
        FLOWOPS.iter().find(|f| f.1 == name).map(|f| f.0)
    }

    /// The names, for "accepted: ..." in errors.
    pub fn names() -> String {
        FLOWOPS.iter().map(|f| f.1).collect::<Vec<_>>().join(", ")
    }

    /// Flowops that pick a file from `filesetname` when their descriptor is not open.
    pub fn needs_fileset(self) -> bool {
        matches!(self, FlowopKind::CreateFile | FlowopKind::OpenFile | FlowopKind::FsyncSet)
    }
}
