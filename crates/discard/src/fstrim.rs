//! fstrim: no online TRIM; a periodic FITRIM (util-linux's fstrim.timer) with a minimum extent
//! length. `fstrim:PERIOD` sets the period in the policy's own text.

use super::{online::Online, ParsedPolicy, PolicyKey, PolicyKind, PolicyParams, PolicySpec, Unit};
use trimlab_sim::DurationNs;

impl PolicyKind {
    /// No online TRIM; a periodic FITRIM (`fstrim`) with a minimum extent length.
    #[allow(non_upper_case_globals)]
    pub const Fstrim: PolicyKind = PolicyKind::plain("fstrim");
}

/// FITRIM's minlen.
pub const MINLEN_BYTES: PolicyKey =
    PolicyKey::new("fstrim_minlen_bytes", Unit::Bytes, 0, "periodic FITRIM's minlen");
/// The period of the periodic FITRIM (util-linux fstrim.timer: weekly); `fstrim:PERIOD` sets it.
pub const PERIOD: PolicyKey =
    PolicyKey::new("fstrim_period", Unit::Duration, 7 * 24 * 3600 * 1_000_000_000, "the FITRIM period")
        .model_only();

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::Fstrim.name(),
    arg_names: &[],
    args: Some("PERIOD"),
    help: "no online TRIM; periodic FITRIM with minlen, skipping trimmed groups (bare fstrim: every 168h)",
    keys: &[MINLEN_BYTES, PERIOD],
    example: PolicyKind::Fstrim,
    parse,
    label: None,
    build: |kind, params, _| Box::new(Online::with_fitrim(kind, params.get(&PERIOD), params.get(&MINLEN_BYTES))),
};

fn parse(args: Option<&str>) -> Result<ParsedPolicy, String> {
    let Some(period) = args else {
        return Ok(ParsedPolicy::plain(PolicyKind::Fstrim));
    };
    let t = period.trim();
    // A bare number is refused rather than guessed: seconds and nanoseconds are both common.
    if !t.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(format!("\"{period}\" needs a unit: a duration like \"2s\" or \"168h\""));
    }
    let d = DurationNs::parse(t)?;
    if d.0 == 0 {
        return Err(format!("\"fstrim:{period}\": the fstrim period must be > 0"));
    }
    Ok(ParsedPolicy { kind: PolicyKind::Fstrim, params: PolicyParams::default().with(&PERIOD, d.0) })
}
