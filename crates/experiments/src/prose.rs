//! The paper prose of an experiment (what the paper reports, the notes, the summary) kept in a
//! `.md` file beside it and read at compile time, so the text is edited as text.
//!
//! The file's `## name` sections hold bullets: `- ` starts one, lines indented by two spaces
//! continue it, and its lines are joined with one space. `{name}` in a bullet is a value the
//! experiment fills in ([`Prose::filled`]); the prose holds no other braces.

use std::fmt::Display;

/// One experiment's `.md` file.
pub struct Prose(pub &'static str);

impl Prose {
    /// The bullets of section `## section`, in order; panics (a bug in the experiment) if the
    /// file has no such section.
    pub fn items(&self, section: &str) -> Vec<String> {
        let heading = format!("## {section}");
        let mut lines = self.0.lines().skip_while(|l| *l != heading);
        assert!(lines.next().is_some(), "the prose has no section `{heading}`");
        let mut items: Vec<String> = Vec::new();
        for line in lines.take_while(|l| !l.starts_with("## ")) {
            if let Some(start) = line.strip_prefix("- ") {
                items.push(start.to_string());
            } else if let Some(more) = line.strip_prefix("  ") {
                let item = items.last_mut().unwrap_or_else(|| panic!("`{heading}` continues no bullet"));
                item.push(' ');
                item.push_str(more);
            }
        }
        items
    }

    /// The one bullet of section `## section`, its `{name}`s filled from `values`.
    pub fn item(&self, section: &str, values: &[(&str, &dyn Display)]) -> String {
        let mut items = self.filled(section, values);
        assert_eq!(items.len(), 1, "section `## {section}` holds one bullet");
        items.remove(0)
    }

    /// The bullets of section `## section`, each `{name}` replaced by its value in `values`.
    /// Panics (a bug in the experiment) on a name without a value or a value no bullet names.
    pub fn filled(&self, section: &str, values: &[(&str, &dyn Display)]) -> Vec<String> {
        let mut used = vec![false; values.len()];
        let items = self.items(section).iter().map(|item| fill(item, values, &mut used)).collect();
        if let Some(i) = used.iter().position(|u| !u) {
            panic!("section `## {section}` does not name `{{{}}}`", values[i].0);
        }
        items
    }
}

fn fill(template: &str, values: &[(&str, &dyn Display)], used: &mut [bool]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').map(|c| open + c);
        let close = close.unwrap_or_else(|| panic!("unclosed `{{` in prose: {template}"));
        let name = &rest[open + 1..close];
        let i = values.iter().position(|(n, _)| *n == name);
        let i = i.unwrap_or_else(|| panic!("no value for `{{{name}}}` in prose: {template}"));
        used[i] = true;
        out.push_str(&values[i].1.to_string());
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}
