//! A fio job file's sections: each job with its options, `[global]`s before it first. fio
//! applies a `[global]` to the jobs after it only, and a later line overrides an earlier one.

use super::FioError;

/// (line, key, value) of one option line.
pub type OptionLine = (usize, String, Option<String>);

/// One job section with the options that apply to it, in the order fio applies them.
pub struct Section {
    pub name: String,
    pub line: usize,
    pub options: Vec<OptionLine>,
}

/// The jobs of `text`, in file order.
pub fn read_sections(text: &str, origin: &str) -> Result<Vec<Section>, FioError> {
    let err = |line: usize, message: String| FioError { origin: origin.to_owned(), line, message };
    let mut global: Vec<OptionLine> = Vec::new();
    let mut jobs: Vec<Section> = Vec::new();
    let mut in_global: Option<bool> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.split_once([';', '#']).map_or(raw, |(before, _)| before).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err(line_no, format!("section header {line:?} has no closing ']'")))?
                .trim()
                .to_owned();
            in_global = Some(name == "global");
            if name != "global" {
                jobs.push(Section { name, line: line_no, options: global.clone() });
            }
            continue;
        }
        if line.starts_with("include ") || line.contains("${") || line.contains('$') && line.contains('=') {
            return Err(err(
                line_no,
                format!(
                    "{line:?}: include files and $variables are not supported; write the values in the file"
                ),
            ));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), Some(v.trim().to_owned())),
            None => (line.to_owned(), None),
        };
        match in_global {
            None => return Err(err(line_no, format!("option {line:?} before any [section]"))),
            Some(true) => global.push((line_no, key, value)),
            Some(false) => {
                jobs.last_mut().expect("a job section is open").options.push((line_no, key, value))
            }
        }
    }
    if jobs.is_empty() {
        return Err(err(text.lines().count().max(1), "no job section (only [global])".into()));
    }
    Ok(jobs)
}
