//! `trimlab compare A B`: two recordings side by side per phase (crates/jobs/src/compare.rs).

use anyhow::Result;
use std::path::PathBuf;

/// `trimlab compare`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The reference recording (a kernel's `serve --record`, or a split .trims file).
    pub a: PathBuf,
    /// The recording compared with it (e.g. `run --record` of the same script).
    pub b: PathBuf,
    /// Print the comparison as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a phase's TRIM commands or bytes differ by more than PCT percent,
    /// or a phase is on one side only.
    #[arg(long, value_name = "PCT")]
    pub within: Option<f64>,
    /// With --within, hold the bytes the TRIMs' union covers instead of their sum (ext4 since
    /// Linux 6.8 sends overlapping TRIMs).
    #[arg(long)]
    pub union: bool,
}

pub fn run(args: &CompareArgs) -> Result<()> {
    let read = |path: &PathBuf| -> Result<_> {
        let text = trimlab_jobs::input::read_text(path, &path.display().to_string())?;
        trimlab_jobs::compare::read_recording(&text, &path.display().to_string())
    };
    let (a, b) = (read(&args.a)?, read(&args.b)?);
    let rows = trimlab_jobs::compare::compare(&a, &b);
    if args.json {
        // Written as it is serialized: a tree of JSON values for 10^5 phases took 750 MB.
        #[derive(serde::Serialize)]
        struct Out<'a> {
            a: &'a PathBuf,
            b: &'a PathBuf,
            phases: &'a [trimlab_jobs::compare::PhaseComparison],
        }
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut stdout, &Out { a: &args.a, b: &args.b, phases: &rows })?;
        std::io::Write::write_all(&mut stdout, b"\n")?;
    } else {
        for line in
            trimlab_jobs::compare::table(&rows, &args.a.display().to_string(), &args.b.display().to_string())
        {
            println!("{line}");
        }
    }
    if let Some(pct) = args.within {
        if !(pct.is_finite() && pct >= 0.0) {
            anyhow::bail!("--within {pct}: expected a percentage, 0 or more");
        }
        use trimlab_jobs::compare::{one_sided, worst_error_of, TrimBytes};
        let one_sided = one_sided(&rows);
        if !one_sided.is_empty() {
            return Err(anyhow::Error::new(crate::reproduce_cmd::ClaimsFailed(format!(
                "{} phase(s) on one side only: {} (--within pairs phases by name and occurrence)",
                one_sided.len(),
                clip_list(&one_sided)
            ))));
        }
        let (bytes, what) = match args.union {
            true => (TrimBytes::Union, "union bytes"),
            false => (TrimBytes::Sum, "bytes"),
        };
        let worst = worst_error_of(&rows, bytes);
        if worst * 100.0 > pct {
            return Err(anyhow::Error::new(crate::reproduce_cmd::ClaimsFailed(format!(
                "a phase's TRIM commands or {what} differ by {:.1} % (more than --within {pct})",
                worst * 100.0
            ))));
        }
    }
    Ok(())
}

/// The first ten names of a list (a recording may have 10^5 phases).
fn clip_list(names: &[String]) -> String {
    match names.len() {
        0..=10 => names.join(", "),
        n => format!("{}, ... ({} more)", names[..10].join(", "), n - 10),
    }
}
