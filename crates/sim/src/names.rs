//! Names a registry accepts: the error for an unknown one, with the accepted names and the
//! closest of them ("did you mean"). Every registry (TRIM engines, host policies, workload
//! kinds, trace formats) words its refusals the same way through these two functions.

/// The accepted name closest to `typed` (a typo, `_` for `-`, wrong case), if one is close.
pub fn did_you_mean<'a>(typed: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.trim().to_ascii_lowercase().replace('_', "-");
    let mut best: Option<(f64, &str)> = None;
    for name in names {
        let longest = typed.chars().count().max(name.chars().count()).max(1);
        let score = 1.0 - edit_distance(&typed, name) as f64 / longest as f64;
        // Ties keep the earlier (registry-order) name, so the hint is deterministic.
        if score >= 0.6 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, name));
        }
    }
    best.map(|(_, n)| n)
}

/// `unknown WHAT "TYPED"; did you mean "X"? accepted: A, B, C` (the hint only when one is close).
pub fn unknown<'a>(what: &str, typed: &str, names: impl IntoIterator<Item = &'a str> + Clone) -> String {
    let hint =
        did_you_mean(typed, names.clone()).map(|m| format!("did you mean \"{m}\"? ")).unwrap_or_default();
    let accepted: Vec<&str> = names.into_iter().collect();
    format!("unknown {what} \"{typed}\"; {hint}accepted: {}", accepted.join(", "))
}

/// `ftrace-blk` as `FtraceBlk`: registry handles print in `{:?}` as the enum variants they
/// replaced did, so no debug output changes with the move to registries.
pub fn camel_case(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours each cost 1 (a swapped pair is the commonest typo).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_and_far_ones_are_not() {
        let names = ["immediate", "none", "delayed"];
        assert_eq!(did_you_mean("delayd", names), Some("delayed"));
        assert_eq!(did_you_mean("Immediat", names), Some("immediate"));
        assert_eq!(did_you_mean("dealyed", names), Some("delayed"), "a swapped pair");
        assert_eq!(did_you_mean("fast", names), None);
        assert_eq!(did_you_mean("lazy_reuse", ["lazy", "lazy-reuse"]), Some("lazy-reuse"));
    }

    #[test]
    fn camel_case_is_the_variant_spelling() {
        assert_eq!(camel_case("ftrace-blk"), "FtraceBlk");
        assert_eq!(camel_case("fio-v3"), "FioV3");
        assert_eq!(camel_case("none"), "None");
    }

    #[test]
    fn the_error_names_the_accepted_names() {
        let e = unknown("TRIM engine", "delayd", ["immediate", "none", "delayed"]);
        assert_eq!(
            e,
            "unknown TRIM engine \"delayd\"; did you mean \"delayed\"? accepted: immediate, none, delayed"
        );
        let e = unknown("TRIM engine", "x", ["immediate"]);
        assert_eq!(e, "unknown TRIM engine \"x\"; accepted: immediate");
    }
}
