//! Column headers for people: `trim_mb_s` reads "TRIM (MB/s)", `trim_free_pct_min` reads
//! "TRIM free, minimum (%)". A column name is snake_case words; the words at its end are looked
//! up in three tables, in order:
//!
//! 1. [`QUALIFIERS`]: what statistic or variant of the quantity the column is (`min`, `max`,
//!    `on`, `off`, ...), peeled from the end, any number of them;
//! 2. [`UNITS`]: the unit, as a word sequence (`mb s` is MB/s, not "mb" in seconds);
//! 3. [`WORDS`]: how the remaining words are spelled (acronyms).
//!
//! So `_min` always means minimum; a duration in minutes is spelled `_minutes`. The tables are
//! the whole rule: a unit this module does not list is shown as a word, never guessed.

/// Trailing words naming a statistic or a variant, and how they read.
pub const QUALIFIERS: [(&str, &str); 8] = [
    ("min", "minimum"),
    ("max", "maximum"),
    ("mean", "mean"),
    ("median", "median"),
    ("end", "at the end"),
    ("on", "on"),
    ("off", "off"),
    ("total", "total"),
];

/// Units as word sequences, longest first where one ends another (`mb s` before `s`).
pub const UNITS: [(&[&str], &str); 15] = [
    (&["mb", "s"], "MB/s"),
    (&["mib", "s"], "MiB/s"),
    (&["gib", "s"], "GiB/s"),
    (&["per", "s"], "per s"),
    (&["pct"], "%"),
    (&["ns"], "ns"),
    (&["us"], "µs"),
    (&["ms"], "ms"),
    (&["s"], "s"),
    (&["minutes"], "min"),
    (&["bytes"], "bytes"),
    (&["kib"], "KiB"),
    (&["mib"], "MiB"),
    (&["gib"], "GiB"),
    (&["tb"], "TB"),
];

/// Words spelled otherwise than in lower case.
pub const WORDS: [(&str, &str); 18] = [
    ("waf", "WAF"),
    ("gc", "GC"),
    ("trim", "TRIM"),
    ("nand", "NAND"),
    ("ftl", "FTL"),
    ("lba", "LBA"),
    ("lpn", "LPN"),
    ("ppa", "PPA"),
    ("io", "IO"),
    ("iops", "IOPS"),
    ("ssd", "SSD"),
    ("fs", "FS"),
    ("dt", "DT"),
    ("hbl", "HBL"),
    ("fg", "foreground"),
    ("1gb", "1GB"),
    ("512mb", "512MB"),
    ("10tb", "10 TB"),
];

/// The header a reader sees for `column`: words, then qualifiers after a comma, then the unit
/// in parentheses ("per s" follows the words instead).
pub fn readable_header(column: &str) -> String {
    let mut words: Vec<&str> = column.split('_').filter(|w| !w.is_empty()).collect();
    let mut qualifiers = Vec::new();
    // A lone word ("s", "min") is the quantity's name, not a qualifier of nothing.
    while words.len() > 1 {
        match QUALIFIERS.iter().find(|(word, _)| words.last() == Some(word)) {
            Some((_, reads)) => {
                qualifiers.push(*reads);
                words.pop();
            }
            None => break,
        }
    }
    qualifiers.reverse();
    let unit = UNITS.iter().find(|(tail, _)| words.len() > tail.len() && words.ends_with(tail));
    if let Some((tail, _)) = unit {
        words.truncate(words.len() - tail.len());
    }
    let mut text = words
        .iter()
        .map(|w| WORDS.iter().find(|(word, _)| word == w).map_or(*w, |(_, spelled)| *spelled))
        .collect::<Vec<_>>()
        .join(" ");
    if !qualifiers.is_empty() {
        text = format!("{text}, {}", qualifiers.join(", "));
    }
    match unit {
        Some((_, "per s")) => format!("{text} per s"),
        Some((_, unit)) => format!("{text} ({unit})"),
        None => text,
    }
}
