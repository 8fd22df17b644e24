//! A fio job file's sections: each job with its options, `[global]`s before it first. fio
//! applies a `[global]` to the jobs after it only, and a later line overrides an earlier one.

use super::FioError;
use crate::script::clip;

/// The most jobs a file may have: fio's own REAL_MAX_JOBS (4096, fio.h; fio stops with
/// "maximum number of jobs reached"). Checked as sections are read, before their options are
/// copied into each.
pub const JOBS_MAX: usize = 4096;

/// The most option lines held over all jobs (each job holds a copy of the `[global]` lines
/// before it): a million is 250 options for each of fio's 4096 jobs. Assumption.
pub const OPTION_LINES_MAX: usize = 1 << 20;

/// (line, key, value) of one option line.
pub type OptionLine = (usize, String, Option<String>);

/// One job section with the options that apply to it, in the order fio applies them.
pub struct Section {
    pub name: String,
    pub line: usize,
    pub options: Vec<OptionLine>,
    /// The lines of the section itself (without the `[global]` ones before it).
    pub own: Vec<OptionLine>,
}

/// The jobs of `text`, in file order.
pub fn read_sections(text: &str, origin: &str) -> Result<Vec<Section>, FioError> {
    let err = |line: usize, message: String| FioError { origin: origin.to_owned(), line, message };
    let mut global: Vec<OptionLine> = Vec::new();
    let mut jobs: Vec<Section> = Vec::new();
    let mut in_global: Option<bool> = None;
    let mut held = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split_once([';', '#']).map_or(raw, |(before, _)| before).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err(line_no, format!("section header \"{}\" has no closing ']'", clip(line))))?
                .trim()
                .to_owned();
            in_global = Some(name == "global");
            if name != "global" {
                if jobs.len() == JOBS_MAX {
                    return Err(err(
                        line_no,
                        format!("more than {JOBS_MAX} jobs (fio's own limit, REAL_MAX_JOBS)"),
                    ));
                }
                held += global.len();
                if held > OPTION_LINES_MAX {
                    return Err(err(line_no, too_many_options()));
                }
                jobs.push(Section { name, line: line_no, options: global.clone(), own: Vec::new() });
            }
            continue;
        }
        if line.starts_with("include ") || line.contains("${") || line.contains('$') && line.contains('=') {
            return Err(err(
                line_no,
                format!(
                    "\"{}\": include files and $variables are not supported; write the values in the file",
                    clip(line)
                ),
            ));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), Some(v.trim().to_owned())),
            None => (line.to_owned(), None),
        };
        held += 1;
        if held > OPTION_LINES_MAX {
            return Err(err(line_no, too_many_options()));
        }
        match in_global {
            None => return Err(err(line_no, format!("option \"{}\" before any [section]", clip(line)))),
            Some(true) => global.push((line_no, key, value)),
            Some(false) => {
                let job = jobs.last_mut().expect("a job section is open");
                job.own.push((line_no, key.clone(), value.clone()));
                job.options.push((line_no, key, value));
            }
        }
    }
    if jobs.is_empty() {
        return Err(err(text.lines().count().max(1), "no job section (only [global])".into()));
    }
    Ok(jobs)
}

/// The options of the file's `[global]` sections as written, a later line replacing an
/// earlier one of the same key (fio's JSON "global options"). Read after [`read_sections`]
/// accepted the text.
pub fn global_options(text: &str) -> Vec<(String, String)> {
    let mut options: Vec<(String, String)> = Vec::new();
    let mut in_global = false;
    for raw in text.lines() {
        let line = raw.split_once([';', '#']).map_or(raw, |(before, _)| before).trim();
        if let Some(rest) = line.strip_prefix('[') {
            in_global = rest.strip_suffix(']').is_some_and(|n| n.trim() == "global");
        } else if in_global && !line.is_empty() {
            let (key, value) = line.split_once('=').map_or((line, ""), |(k, v)| (k.trim(), v.trim()));
            options.retain(|(k, _)| k != key);
            options.push((key.to_owned(), value.to_owned()));
        }
    }
    options
}

fn too_many_options() -> String {
    format!(
        "more than {OPTION_LINES_MAX} option lines over all jobs (each job holds the [global] lines before it; \
         docs/limits.md)"
    )
}
