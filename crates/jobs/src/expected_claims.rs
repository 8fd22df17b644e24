//! `reproduce --expect FILE`: the claims known not to hold, as data. The scale-1 reproduction
//! is the check of the papers' claims (it runs once, in the test command's reproduce tier, not
//! again in tests); this list says which claims are expected to fail there, so a claim that
//! starts failing, or a known failure that starts holding, fails the run.
//!
//! The file has one line per claim expected not to hold: `experiment: text`, where `text` is
//! any part of the claim (README.md's "Claims that do not hold" says why each fails). Lines
//! starting with `#` and blank lines are ignored.

use trimlab_report::ExperimentReport;

/// One expected failure: the experiment and a piece of its claim's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedFailure {
    pub experiment: String,
    pub claim_part: String,
    /// Where it was written: `FILE:LINE`.
    pub origin: String,
}

/// Reads the list; a line without `experiment: text` is an error naming `origin:line`.
pub fn parse(text: &str, origin: &str) -> Result<Vec<ExpectedFailure>, String> {
    let mut expected = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{origin}:{}", index + 1);
        match line.split_once(':') {
            Some((experiment, claim)) if !experiment.trim().is_empty() && !claim.trim().is_empty() => {
                expected.push(ExpectedFailure {
                    experiment: experiment.trim().to_string(),
                    claim_part: claim.trim().to_string(),
                    origin: at,
                })
            }
            _ => return Err(format!("{at}: {line:?} is not `experiment: part of the claim's text`")),
        }
    }
    Ok(expected)
}

/// Every disagreement between the reports' verdicts and the expected failures: a claim that
/// fails without being listed, a listed claim that holds, and a listed line that names no claim
/// of an experiment that ran (a stale entry). Lines for experiments that did not run are ignored.
pub fn disagreements(reports: &[ExperimentReport], expected: &[ExpectedFailure]) -> Vec<String> {
    let mut problems = Vec::new();
    for report in reports {
        let listed: Vec<&ExpectedFailure> = expected.iter().filter(|e| e.experiment == report.name).collect();
        for verdict in &report.verdicts {
            let entry = listed.iter().find(|e| verdict.claim.contains(&e.claim_part));
            match (verdict.holds, entry) {
                (false, None) => {
                    problems.push(format!("{}: fails but is not expected to: {}", report.name, verdict.claim))
                }
                (true, Some(e)) => problems.push(format!(
                    "{}: holds but {} expects it to fail (remove the line): {}",
                    report.name, e.origin, verdict.claim
                )),
                _ => {}
            }
        }
        for entry in listed {
            if !report.verdicts.iter().any(|v| v.claim.contains(&entry.claim_part)) {
                problems.push(format!(
                    "{}: {} names no claim of {}: {:?}",
                    report.name, entry.origin, report.name, entry.claim_part
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_report::Verdict;

    fn report(name: &str, verdicts: &[(&str, bool)]) -> ExperimentReport {
        ExperimentReport {
            name: name.into(),
            verdicts: verdicts
                .iter()
                .map(|(claim, holds)| Verdict {
                    claim: claim.to_string(),
                    holds: *holds,
                    detail: String::new(),
                })
                .collect(),
            title: String::new(),
            summary: String::new(),
            paper: Vec::new(),
            notes: Vec::new(),
            tables: Vec::new(),
            plots: Vec::new(),
            params: Vec::new(),
        }
    }

    #[test]
    fn a_listed_failure_passes_and_every_disagreement_is_named() {
        let expected = parse("# known\n\nx: Fig. 2\nx: Table 9\ny: anything\n", "list").unwrap();
        assert_eq!(expected[1].origin, "list:4");
        let ok = report("x", &[("[band] Fig. 2: WAF", false), ("Fig. 3", true), ("Table 9 values", false)]);
        assert!(disagreements(&[ok], &expected).is_empty(), "y did not run, so its line is ignored");
        let drifted = report("x", &[("[band] Fig. 2: WAF", true), ("Fig. 3", false)]);
        let problems = disagreements(&[drifted], &expected);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("holds but list:3 expects it to fail"), "{problems:?}");
        assert!(problems[1].contains("fails but is not expected to: Fig. 3"), "{problems:?}");
        assert!(problems[2].contains("list:4 names no claim of x"), "{problems:?}");
    }

    #[test]
    fn a_line_without_an_experiment_is_an_error_with_its_place() {
        let e = parse("x: ok\nno colon here\n", "f.txt").unwrap_err();
        assert!(e.starts_with("f.txt:2:"), "{e}");
        assert!(parse(": claim\n", "f").is_err());
    }
}
