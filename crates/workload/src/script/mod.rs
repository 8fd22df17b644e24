//! A file-operation script (`[workload] kind = "script"`, `[[phase]] kind = "ops"`): a
//! person's own file workload written as shell-like lines (docs/config.md, "Scripts"). The
//! whole text is parsed before anything runs, so a typo on line 90 cannot waste the run's
//! first 89 lines; `phase NAME` lines split it into the phases a run reports.

mod op;
mod pattern;
mod run;

pub use op::{Op, Paths, Pick, SizeSpec, OPERATIONS};
pub use pattern::{clip, expand_braces, natural_cmp, Pattern, EXPANSION_MAX, NESTING_MAX};
pub use run::{with_interpreter, Interpreter, DEFAULT_STREAM};

use std::fmt;

/// A script error: where (the line, and the file or key it came from) and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// The file or config key the script came from (`workload.ops`, `rm-dirs.ops`).
    pub origin: String,
    /// 1-based, in the script's own text.
    pub line: usize,
    /// The line as written (without its comment).
    pub text: String,
    pub message: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message =
            trimlab_importers::input::clip(&self.message, trimlab_importers::input::MESSAGE_CHARS_MAX);
        write!(f, "{}:{}: `{}`: {}", self.origin, self.line, self.text, message)
    }
}

impl std::error::Error for ScriptError {}

/// One parsed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub number: usize,
    pub text: String,
    pub op: Op,
}

/// The lines between two `phase` lines; `name` is None before the first one.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptPhase {
    pub name: Option<String>,
    pub lines: Vec<Line>,
}

/// A parsed script.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    pub origin: String,
    pub lines: Vec<Line>,
}

/// The most lines a script may have (a generated script of millions of single-file lines
/// should use patterns; this bounds the memory a mistaken file can take).
pub const LINES_MAX: usize = 1_000_000;

/// The most `phase` lines a script may have: each phase is a report entry of its own (a
/// million of them took 4.4 GB); a longer series of phases is several runs, or one phase.
pub const PHASES_MAX: usize = 10_000;

impl Script {
    /// Parses every line of `text`; the first bad line is the error.
    pub fn parse(text: &str, origin: &str) -> Result<Script, ScriptError> {
        let (mut lines, mut phases) = (Vec::new(), 0usize);
        for (i, raw) in text.lines().enumerate() {
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let error = |message: String| ScriptError {
                origin: origin.to_string(),
                line: i + 1,
                text: pattern::clip(body),
                message,
            };
            if lines.len() == LINES_MAX {
                return Err(error(format!("a script may have at most {LINES_MAX} operations")));
            }
            let op = op::parse_line(body).map_err(error)?;
            if let Op::Phase(_) = op {
                phases += 1;
                if phases > PHASES_MAX {
                    return Err(error(format!(
                        "a script may have at most {PHASES_MAX} phase lines (each is a report entry); \
                         split it into several runs"
                    )));
                }
            }
            lines.push(Line { number: i + 1, text: body.to_string(), op });
        }
        Ok(Script { origin: origin.to_string(), lines })
    }

    /// The script split at its `phase` lines (a script without any is one unnamed phase; the
    /// lines before the first `phase` line, if any, are an unnamed phase of their own).
    pub fn phases(&self) -> Vec<ScriptPhase> {
        let mut out: Vec<ScriptPhase> = Vec::new();
        for line in &self.lines {
            match &line.op {
                Op::Phase(name) => out.push(ScriptPhase { name: Some(name.clone()), lines: Vec::new() }),
                _ => match out.last_mut() {
                    Some(p) => p.lines.push(line.clone()),
                    None => out.push(ScriptPhase { name: None, lines: vec![line.clone()] }),
                },
            }
        }
        out
    }

    /// The error for `line` with `message` (for the interpreter).
    pub fn error(&self, line: &Line, message: String) -> ScriptError {
        ScriptError {
            origin: self.origin.clone(),
            line: line.number,
            text: pattern::clip(&line.text),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Script::parse(text, "t.ops").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_line_and_what_is_accepted() {
        assert_eq!(
            err("mkdir d\n\nfrobnicate x"),
            format!("t.ops:3: `frobnicate x`: unknown operation \"frobnicate\" (accepted: {OPERATIONS})")
        );
        assert!(err("create f size=24").contains("t.ops:1: `create f size=24`: size=24 has no unit"));
        assert!(err("create f").contains("needs size=SIZE"));
        assert!(err("create f size=8KiB..4KiB").contains("minimum is above"));
        assert!(err("rm -x f").contains("unknown flag -x (accepted: -rf)"));
        assert!(err("rm every=0 f*").contains("every=0"));
        assert!(err("rm start=2 f*").contains("start= goes with every"));
        assert!(err("fstrim minlen=64KiB where=1").contains("unknown option where="));
        assert!(err("sleep 200").contains("has no unit"));
        assert!(err("mv a").contains("two paths"));
        assert!(err("mv a* b").contains("is a pattern"));
        assert!(err("mount discard=sometimes").contains("discard=sometimes"));
        assert!(err("rm ../x").contains("'..'"));
        assert!(err("rm /").contains("mount point itself"));
        assert!(err("create d{0..3/f size=4KiB").contains("without its '}'"));
        assert!(err("phase a b").contains("one name"));
        assert!(err("write f bytes=4KiB bytes=8KiB").contains("given twice"));
        let many = "phase p\n".repeat(PHASES_MAX + 1);
        assert!(
            err(&many).contains(&format!("t.ops:{}: `phase p`: a script may have at most", PHASES_MAX + 1))
        );
        let words = "f{0..9999999} ".repeat(2);
        assert!(err(&format!("rm {words}")).contains("the line's words expand to more than 10000000"));
        let long = err(&format!("rm {}", "x{".repeat(100_000)));
        assert!(long.len() < 600, "a hostile line is quoted cut: {long}");
    }

    #[test]
    fn comments_blank_lines_and_phases() {
        let s = Script::parse("# setup\nmkdir -p d{0..1}  # two dirs\nphase write\ncreate d{0..1}/f{1..2} size=4KiB..12KiB bs=4KiB\n\nphase rm\nrm -rf d1\n", "t").unwrap();
        assert_eq!(s.lines.len(), 5);
        match &s.lines[0].op {
            Op::Mkdir { parents: true, paths } => assert_eq!(paths.expand(), ["d0", "d1"]),
            other => panic!("{other:?}"),
        }
        let phases = s.phases();
        assert_eq!(phases.len(), 3);
        assert_eq!(phases[0].name, None);
        assert_eq!(phases[1].name.as_deref(), Some("write"));
        assert_eq!(phases[2].lines[0].number, 7);
        match &phases[1].lines[0].op {
            Op::Create { paths, size, bs, fsync } => {
                assert_eq!(paths.expand(), ["d0/f1", "d0/f2", "d1/f1", "d1/f2"]);
                assert_eq!(paths.count(), 4);
                assert_eq!(*size, SizeSpec::Uniform(4096, 12288));
                assert_eq!((*bs, *fsync), (Some(4096), false));
            }
            other => panic!("{other:?}"),
        }
    }
}
