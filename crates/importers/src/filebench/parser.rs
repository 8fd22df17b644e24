//! Reads Filebench's workload model language (WML) into a [`Model`]: `set $var=...`,
//! `define fileset|file|process`, `thread` and `flowop` blocks, `set mode quit ...`,
//! `eventgen`, `run`/`psrun`. The text is read whole first and the variables resolved after
//! (Filebench reads `$var` when the run starts, so a `set` below a `define` still counts).

use super::model::{FilesetDef, FlowopDef, FlowopKind, Mode, Model, ThreadDef};
use super::value::{number, Amount};
use super::FilebenchError;
use std::collections::BTreeMap;

/// One statement's attributes as written: `key=value` or a bare `key` (a boolean).
#[derive(Clone, Debug)]
struct RawDef {
    line: usize,
    text: String,
    attrs: Vec<(String, Option<String>)>,
}

#[derive(Debug)]
struct RawThread {
    def: RawDef,
    flowops: Vec<(String, RawDef)>,
}

#[derive(Debug)]
struct RawProcess {
    def: RawDef,
    threads: Vec<RawThread>,
}

/// Where the reader is: which block a `{` opens and what a line may be.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scope {
    Top,
    /// After `define process`, before its `{`.
    ProcessOpening,
    Process,
    ThreadOpening,
    Thread,
}

/// What the lines said, before variables are resolved.
struct Reader<'a> {
    origin: &'a str,
    vars: BTreeMap<String, String>,
    filesets: Vec<(bool, RawDef)>,
    processes: Vec<RawProcess>,
    scope: Scope,
    mode: Mode,
    run: Option<(RawDef, Option<String>)>,
    eventgen: Option<RawDef>,
    ignored: Vec<String>,
}

/// Statements accepted at the top level, for errors.
const STATEMENTS: &str =
    "set, define fileset|file|process, eventgen, run, psrun, echo, usage, create, debug, enable, version";

const FILESET_ATTRS: &[&str] = &[
    "name",
    "path",
    "entries",
    "dirwidth",
    "dirgamma",
    "size",
    "filesize",
    "prealloc",
    "reuse",
    "paralloc",
    "readonly",
    "writeonly",
    "trusttree",
    "cached",
    "leafdirs",
];
const FILE_ATTRS: &[&str] = &[
    "name",
    "path",
    "size",
    "filesize",
    "prealloc",
    "reuse",
    "paralloc",
    "readonly",
    "writeonly",
    "trusttree",
    "cached",
];
const PROCESS_ATTRS: &[&str] = &["name", "instances", "nice"];
const THREAD_ATTRS: &[&str] = &["name", "instances", "memsize", "useism", "ioprio"];
const FLOWOP_ATTRS: &[&str] = &[
    "name",
    "filesetname",
    "filename",
    "fd",
    "srcfd",
    "iosize",
    "iters",
    "dsync",
    "random",
    "directio",
    "workingset",
    "value",
    "target",
    "noreadahead",
];

/// Parses a whole model file.
pub fn parse(text: &str, origin: &str) -> Result<Model, FilebenchError> {
    let mut r = Reader {
        origin,
        vars: BTreeMap::new(),
        filesets: Vec::new(),
        processes: Vec::new(),
        scope: Scope::Top,
        mode: Mode::Timeout,
        run: None,
        eventgen: None,
        ignored: Vec::new(),
    };
    let mut last = (0, String::new());
    for (i, raw) in text.lines().enumerate() {
        let body = strip_comment(raw).trim();
        if body.is_empty() {
            continue;
        }
        last = (i + 1, body.to_string());
        r.line(i + 1, body)?;
    }
    if r.scope != Scope::Top {
        return Err(FilebenchError::new(
            origin,
            last.0,
            &last.1,
            "the file ends inside a block: a '}' is missing",
        ));
    }
    r.build()
}

/// The text before a `#` that is not inside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

impl Reader<'_> {
    fn err(&self, line: usize, text: &str, message: impl Into<String>) -> FilebenchError {
        FilebenchError::new(self.origin, line, text, message)
    }

    /// One line: words that print or tune Filebench itself are skipped; braces are split off
    /// so that `thread ... {` and a `{` on its own line read alike.
    fn line(&mut self, n: usize, body: &str) -> Result<(), FilebenchError> {
        let word = body.split_whitespace().next().unwrap_or("");
        match word {
            "echo" | "usage" | "version" => return Ok(()),
            "debug" | "enable" | "create" => {
                self.ignored.push(format!("line {n}: `{body}` has no effect on the model"));
                return Ok(());
            }
            _ => {}
        }
        let mut rest = body;
        while !rest.is_empty() {
            let cut = rest.find(['{', '}']).unwrap_or(rest.len());
            let stmt = rest[..cut].trim();
            if !stmt.is_empty() {
                self.statement(n, body, stmt)?;
            }
            if cut < rest.len() {
                self.brace(n, body, &rest[cut..cut + 1])?;
            }
            rest = rest.get(cut + 1..).unwrap_or("");
        }
        Ok(())
    }

    fn brace(&mut self, n: usize, body: &str, brace: &str) -> Result<(), FilebenchError> {
        self.scope = match (self.scope, brace) {
            (Scope::ProcessOpening, "{") => Scope::Process,
            (Scope::ThreadOpening, "{") => Scope::Thread,
            (Scope::Thread, "}") => Scope::Process,
            (Scope::Process, "}") => Scope::Top,
            (_, "{") => {
                return Err(self.err(
                    n,
                    body,
                    "a '{' opens only the block of a `define process` or a `thread`",
                ))
            }
            _ => return Err(self.err(n, body, "a '}' without its block")),
        };
        Ok(())
    }

    fn statement(&mut self, n: usize, body: &str, stmt: &str) -> Result<(), FilebenchError> {
        let (word, rest) = stmt.split_once(char::is_whitespace).unwrap_or((stmt, ""));
        let rest = rest.trim();
        let def = |r: &Self, attrs: &str| -> Result<RawDef, FilebenchError> {
            Ok(RawDef {
                line: n,
                text: body.to_string(),
                attrs: split_attrs(attrs).map_err(|m| r.err(n, body, m))?,
            })
        };
        match (self.scope, word) {
            (Scope::Top, "set") => self.set(n, body, rest),
            (Scope::Top, "define") => self.define(n, body, rest),
            (Scope::Top, "eventgen") => {
                self.eventgen = Some(def(self, rest)?);
                Ok(())
            }
            (Scope::Top, "run" | "psrun") => self.run_line(n, body, word, rest),
            (Scope::Process, "thread") => {
                let d = def(self, rest)?;
                let p = self
                    .processes
                    .last_mut()
                    .ok_or_else(|| FilebenchError::new(self.origin, n, body, "thread outside a process"))?;
                p.threads.push(RawThread { def: d, flowops: Vec::new() });
                self.scope = Scope::ThreadOpening;
                Ok(())
            }
            (Scope::Thread, "flowop") => {
                let (kind, attrs) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let d = def(self, attrs)?;
                let t = self.processes.last_mut().and_then(|p| p.threads.last_mut());
                let t =
                    t.ok_or_else(|| FilebenchError::new(self.origin, n, body, "flowop outside a thread"))?;
                t.flowops.push((kind.to_string(), d));
                Ok(())
            }
            (Scope::ProcessOpening | Scope::ThreadOpening, _) => {
                Err(self.err(n, body, "expected '{' to open the block"))
            }
            (Scope::Process, _) => {
                Err(self.err(n, body, format!("\"{word}\" inside a process block (accepted: thread)")))
            }
            (Scope::Thread, _) => {
                Err(self.err(n, body, format!("\"{word}\" inside a thread block (accepted: flowop)")))
            }
            (
                Scope::Top,
                "system" | "shutdown" | "quit" | "sleep" | "stats" | "load" | "domultisync" | "enable_multi"
                | "warmup" | "fscheck" | "fsflush" | "cvar" | "list",
            ) => Err(self.err(
                n,
                body,
                format!("`{word}` is a Filebench command trimlab does not model (accepted: {STATEMENTS})"),
            )),
            (Scope::Top, _) => {
                Err(self.err(n, body, format!("unknown statement \"{word}\" (accepted: {STATEMENTS})")))
            }
        }
    }

    /// `set $var = value` or `set mode quit firstdone|alldone|timeout`.
    fn set(&mut self, n: usize, body: &str, rest: &str) -> Result<(), FilebenchError> {
        if let Some(var) = rest.strip_prefix('$') {
            let (name, value) =
                var.split_once('=').ok_or_else(|| self.err(n, body, "set $NAME=VALUE needs '='"))?;
            self.vars.insert(name.trim().to_string(), value.trim().trim_matches('"').to_string());
            return Ok(());
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        self.mode = match words.as_slice() {
            ["mode", "quit", "firstdone"] => Mode::FirstDone,
            ["mode", "quit", "alldone"] => Mode::AllDone,
            ["mode", "quit", "timeout"] | ["mode", "timeout"] => Mode::Timeout,
            _ => {
                return Err(self.err(
                    n,
                    body,
                    "accepted: set $NAME=VALUE, set mode quit firstdone|alldone|timeout",
                ))
            }
        };
        Ok(())
    }

    fn define(&mut self, n: usize, body: &str, rest: &str) -> Result<(), FilebenchError> {
        let (what, attrs) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let attrs = split_attrs(attrs).map_err(|m| self.err(n, body, m))?;
        let d = RawDef { line: n, text: body.to_string(), attrs };
        match what {
            "fileset" | "filesets" => self.filesets.push((false, d)),
            "file" | "files" => self.filesets.push((true, d)),
            "process" | "processes" => {
                self.processes.push(RawProcess { def: d, threads: Vec::new() });
                self.scope = Scope::ProcessOpening;
            }
            "randvar" => return Err(self.err(n, body, "define randvar is Filebench 1.4's random variables; write the value as cvar(type=cvar-gamma,parameters=mean:M;gamma:G) in a set line")),
            other => return Err(self.err(n, body, format!("define {other} is not modelled (accepted: define fileset, define file, define process)"))),
        }
        Ok(())
    }

    /// `run [N]`, `psrun [-SAMPLE] [N]`.
    fn run_line(&mut self, n: usize, body: &str, word: &str, rest: &str) -> Result<(), FilebenchError> {
        if self.run.is_some() {
            return Err(self.err(n, body, "a model runs once: a second run line"));
        }
        let mut args: Vec<&str> = rest.split_whitespace().collect();
        if word == "psrun" && args.first().is_some_and(|a| a.starts_with('-')) {
            args.remove(0);
        }
        if args.len() > 1 {
            return Err(self.err(n, body, format!("accepted: {word} [SECONDS]")));
        }
        let d = RawDef { line: n, text: body.to_string(), attrs: Vec::new() };
        self.run = Some((d, args.first().map(|s| s.to_string())));
        Ok(())
    }
}

/// `a=1,b=cvar(x=1,y=2),flag`: split at commas outside parentheses.
fn split_attrs(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    let bytes = text.as_bytes();
    for i in 0..=bytes.len() {
        match bytes.get(i) {
            Some(b'(') => depth += 1,
            Some(b')') if depth == 0 => return Err("a ')' without its '('".into()),
            Some(b')') => depth -= 1,
            Some(b',') if depth == 0 => {}
            None => {}
            _ => continue,
        }
        if bytes.get(i).is_some_and(|b| *b != b',') {
            continue;
        }
        let item = text[start..i].trim();
        start = i + 1;
        if item.is_empty() {
            continue;
        }
        match item.split_once('=') {
            Some((k, v)) => out.push((k.trim().to_string(), Some(v.trim().trim_matches('"').to_string()))),
            None => out.push((item.to_string(), None)),
        }
    }
    if depth != 0 {
        return Err("a '(' without its ')'".into());
    }
    Ok(out)
}

/// A statement's attributes with the variables resolved.
struct Attrs<'a> {
    def: &'a RawDef,
    vars: &'a BTreeMap<String, String>,
    origin: &'a str,
}

impl Attrs<'_> {
    fn err(&self, message: impl Into<String>) -> FilebenchError {
        FilebenchError::new(self.origin, self.def.line, &self.def.text, message)
    }

    fn check(&self, what: &str, allowed: &[&str]) -> Result<(), FilebenchError> {
        match self.def.attrs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((k, _)) => {
                Err(self
                    .err(format!("unknown attribute \"{k}\" for {what} (accepted: {})", allowed.join(", "))))
            }
            None => Ok(()),
        }
    }

    /// The attribute's value, `$var` replaced; Some(None) for a bare `key`.
    fn raw(&self, key: &str) -> Result<Option<Option<String>>, FilebenchError> {
        let Some((_, v)) = self.def.attrs.iter().rev().find(|(k, _)| k == key) else { return Ok(None) };
        match v {
            None => Ok(Some(None)),
            Some(v) => {
                resolve(v, self.vars).map(|v| Some(Some(v))).map_err(|m| self.err(format!("{key}: {m}")))
            }
        }
    }

    fn text(&self, key: &str) -> Result<Option<String>, FilebenchError> {
        match self.raw(key)? {
            Some(None) => Err(self.err(format!("{key} needs a value ({key}=...)"))),
            Some(Some(v)) => Ok(Some(v)),
            None => Ok(None),
        }
    }

    fn amount(&self, key: &str) -> Result<Option<Amount>, FilebenchError> {
        match self.text(key)? {
            Some(v) => Amount::parse(&v).map(Some).map_err(|m| self.err(format!("{key}: {m}"))),
            None => Ok(None),
        }
    }

    fn number(&self, key: &str, default: u64) -> Result<u64, FilebenchError> {
        match self.text(key)? {
            Some(v) => number(&v).map_err(|m| self.err(format!("{key}: {m}"))),
            None => Ok(default),
        }
    }

    /// A boolean: bare `key`, `key=true|false`, absent false.
    fn flag(&self, key: &str) -> Result<bool, FilebenchError> {
        match self.raw(key)? {
            None => Ok(false),
            Some(None) => Ok(true),
            Some(Some(v)) => match v.as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                other => Err(self.err(format!("{key}={other}: accepted: true, false, or {key} alone"))),
            },
        }
    }

    fn name(&self, what: &str) -> Result<String, FilebenchError> {
        self.text("name")?.ok_or_else(|| self.err(format!("{what} needs name=")))
    }
}

/// `$var` to its value (a variable may name another); other text as it is.
fn resolve(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut v = text.to_string();
    for _ in 0..8 {
        let Some(name) = v.strip_prefix('$') else { return Ok(v) };
        v = vars
            .get(name)
            .cloned()
            .ok_or_else(|| format!("${name} is not set (set it with `set ${name}=VALUE`)"))?;
    }
    Err(format!("\"{text}\": variables name each other in a loop"))
}

impl Reader<'_> {
    fn attrs<'a>(&'a self, def: &'a RawDef) -> Attrs<'a> {
        Attrs { def, vars: &self.vars, origin: self.origin }
    }

    fn build(self) -> Result<Model, FilebenchError> {
        let (mut filesets, mut entries) = (Vec::new(), 0u64);
        for (single, def) in &self.filesets {
            let f = self.fileset(def, *single)?;
            // Checked before the run populates them (entries=1e9 once took 16 GB).
            entries = entries.saturating_add(f.entries);
            if entries > ENTRIES_MAX {
                return Err(self.attrs(def).err(format!(
                    "the filesets hold {entries} entries with this one, more than {ENTRIES_MAX} \
                     (Filebench's own FILEBENCH_NFILESETENTRIES; docs/limits.md)"
                )));
            }
            if filesets.iter().any(|o: &FilesetDef| o.name == f.name) {
                return Err(self.attrs(def).err(format!("fileset \"{}\" is defined twice", f.name)));
            }
            filesets.push(f);
        }
        let (mut threads, mut total) = (Vec::new(), 0u64);
        for p in &self.processes {
            let a = self.attrs(&p.def);
            a.check("define process", PROCESS_ATTRS)?;
            let (pname, pinst) = (a.name("define process")?, a.number("instances", 1)?);
            for t in &p.threads {
                let thread = self.thread(t, &pname, pinst, &filesets)?;
                // Checked before the run builds a state per instance (2^32 x 2^32 once
                // overflowed the allocation).
                total = total.saturating_add(thread.instances);
                if total > THREADS_MAX {
                    return Err(self.attrs(&t.def).err(format!(
                        "{total} thread instances with this one (process instances x thread instances), \
                         more than {THREADS_MAX} (Filebench's own FILEBENCH_NTHREADFLOWS; docs/limits.md)"
                    )));
                }
                threads.push(thread);
            }
        }
        let runtime_s = match &self.run {
            Some((d, Some(n))) => {
                let a = self.attrs(d);
                Some(resolve(n, &self.vars).and_then(|v| number(&v)).map_err(|m| a.err(m))?)
            }
            // `run` alone, or no run line (Filebench 1.4 ran the loaded model on `run`):
            // timed runs last Filebench's default 60 s, quit modes until they end.
            _ => (self.mode == Mode::Timeout).then_some(60),
        };
        let mut ignored = self.ignored.clone();
        if self.run.is_none() {
            ignored.push(match runtime_s {
                Some(s) => format!("no run line: ran as `run` ({s} s, Filebench's default)"),
                None => "no run line: ran as `run` (until the quit mode ends it)".to_string(),
            });
        }
        let eventgen_rate = match &self.eventgen {
            Some(d) => {
                let a = self.attrs(d);
                a.check("eventgen", &["rate"])?;
                let rate = a.number("rate", 0)?;
                if rate > EVENT_RATE_MAX {
                    return Err(a.err(format!(
                        "rate={rate}: more than {EVENT_RATE_MAX} events per second, one per nanosecond \
                         (the simulated clock's resolution)"
                    )));
                }
                Some(rate).filter(|&r| r > 0)
            }
            None => None,
        };
        Ok(Model { filesets, threads, runtime_s, mode: self.mode, eventgen_rate, ignored })
    }

    fn fileset(&self, def: &RawDef, single: bool) -> Result<FilesetDef, FilebenchError> {
        let a = self.attrs(def);
        let what = if single { "define file" } else { "define fileset" };
        a.check(what, if single { FILE_ATTRS } else { FILESET_ATTRS })?;
        if a.number("leafdirs", 0)? > 0 {
            return Err(a.err("leafdirs (filesets of directories, for makedir/removedir/listdir) is not modelled; use entries="));
        }
        let size = match (a.amount("size")?, a.amount("filesize")?) {
            (Some(s), _) | (None, Some(s)) => s,
            (None, None) => Amount::Fixed(0),
        };
        let prealloc_percent = match a.raw("prealloc")? {
            None => 0,
            Some(None) => 100,
            Some(Some(v)) if v == "true" => 100,
            Some(Some(v)) if v == "false" => 0,
            Some(Some(v)) => match number(&v) {
                Ok(p) if p <= 100 => p,
                _ => {
                    return Err(
                        a.err(format!("prealloc={v}: accepted: a percent 0..=100, or prealloc alone (100)"))
                    )
                }
            },
        };
        let entries = if single { 1 } else { a.number("entries", 0)? };
        if entries == 0 {
            return Err(a.err("a fileset needs entries=N (N > 0)"));
        }
        let dirwidth = if single {
            Amount::Fixed(10)
        } else {
            a.amount("dirwidth")?.ok_or_else(|| {
                a.err("a fileset needs dirwidth= (Filebench: \"Fileset has no directory width\")")
            })?
        };
        if dirwidth.mean() < 1.0 {
            return Err(a.err("dirwidth must be at least 1"));
        }
        Ok(FilesetDef {
            name: a.name(what)?,
            line: def.line,
            entries,
            dirwidth,
            dirgamma: if single { 0.0 } else { a.number("dirgamma", 1500)? as f64 / 1000.0 },
            size,
            prealloc_percent,
            readonly: a.flag("readonly")?,
            single_file: single,
        })
    }

    fn thread(
        &self,
        t: &RawThread,
        process: &str,
        pinst: u64,
        filesets: &[FilesetDef],
    ) -> Result<ThreadDef, FilebenchError> {
        let a = self.attrs(&t.def);
        a.check("thread", THREAD_ATTRS)?;
        let name = format!("{process}/{}", a.name("thread")?);
        let instances = pinst.saturating_mul(a.number("instances", 1)?);
        let mut flowops = Vec::new();
        for (kind, def) in &t.flowops {
            flowops.push(self.flowop(kind, def, filesets)?);
        }
        if flowops.is_empty() {
            return Err(a.err("a thread needs at least one flowop"));
        }
        Ok(ThreadDef { name, instances, flowops })
    }

    fn flowop(&self, kind: &str, def: &RawDef, filesets: &[FilesetDef]) -> Result<FlowopDef, FilebenchError> {
        let a = self.attrs(def);
        let kind = FlowopKind::parse(kind).ok_or_else(|| {
            a.err(format!("flowop \"{kind}\" is not modelled (accepted: {})", FlowopKind::names()))
        })?;
        a.check(&format!("flowop {}", kind.name()), FLOWOP_ATTRS)?;
        let fileset = match a.text("filesetname")?.or(a.text("filename")?) {
            Some(n) => Some(filesets.iter().position(|f| f.name == n).ok_or_else(|| {
                let known: Vec<&str> = filesets.iter().map(|f| f.name.as_str()).collect();
                a.err(format!(
                    "no fileset \"{n}\" (defined: {})",
                    if known.is_empty() { "none".into() } else { known.join(", ") }
                ))
            })?),
            None => None,
        };
        if kind.needs_fileset() && fileset.is_none() {
            return Err(a.err(format!("flowop {} needs filesetname=", kind.name())));
        }
        let fd = a.number("fd", 0)? as usize;
        let srcfd = a
            .text("srcfd")?
            .map(|v| number(&v).map(|n| n as usize))
            .transpose()
            .map_err(|m| a.err(format!("srcfd: {m}")))?;
        if fd >= FD_MAX || srcfd.is_some_and(|s| s >= FD_MAX) {
            return Err(a.err(format!("fd and srcfd must be below {FD_MAX} (Filebench's THREADFLOW_MAXFD)")));
        }
        let value = a.amount("value")?;
        if matches!(kind, FlowopKind::Delay | FlowopKind::FinishOnCount | FlowopKind::FinishOnBytes)
            && value.is_none()
        {
            return Err(a.err(format!("flowop {} needs value=", kind.name())));
        }
        Ok(FlowopDef {
            line: def.line,
            text: def.text.clone(),
            name: a.text("name")?.unwrap_or_else(|| kind.name().to_string()),
            kind,
            fileset,
            fd,
            srcfd,
            iosize: a.amount("iosize")?,
            workingset: a.amount("workingset")?,
            value,
            target: a.text("target")?,
            iters: match a.number("iters", 1)? {
                n if n > ITERS_MAX => {
                    return Err(a.err(format!("iters={n}: at most {ITERS_MAX} (docs/limits.md)")))
                }
                n => n.max(1),
            },
            dsync: a.flag("dsync")?,
            random: a.flag("random")?,
            directio: a.flag("directio")?,
        })
    }
}

/// Descriptor slots per thread (Filebench's THREADFLOW_MAXFD).
pub const FD_MAX: usize = 128;

/// The most fileset entries of a model, over all its filesets: Filebench's own
/// FILEBENCH_NFILESETENTRIES (1024 * 1024, ipc.h of 1.5-alpha3). Each entry is held (its
/// path, size and state) for the whole run.
pub const ENTRIES_MAX: u64 = 1 << 20;

/// The most threads of a model (process instances × thread instances, over all threads):
/// Filebench's FILEBENCH_NTHREADFLOWS (64 × FILEBENCH_MEMSIZE 2048, ipc.h of 1.5-alpha3).
pub const THREADS_MAX: u64 = 64 * 2048;

/// The most times one flowop repeats per turn (`iters=`): a turn runs to its end before the
/// run's time is looked at again, so a billion iterations would hold the run past its end.
/// Filebench's own models use 1 to a few dozen. Assumption.
pub const ITERS_MAX: u64 = 1_000_000;

/// The fastest `eventgen rate=` (events per second): one event per nanosecond, the
/// simulated clock's resolution; a faster rate would give events no time apart.
pub const EVENT_RATE_MAX: u64 = 1_000_000_000;
