//! What the bench reads of the machine: the process's resident set from /proc.

/// The process's peak resident set (VmHWM), where /proc exists.
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// A size field of /proc/self/status (`VmHWM:`, `VmRSS:`, in KiB there), in bytes.
pub fn status_bytes(field: &str) -> Option<u64> {
    kib_field_bytes(&std::fs::read_to_string("/proc/self/status").ok()?, field)
}

/// A `Name:   1234 kB` line of a /proc file's `text` (status, smaps_rollup), in bytes.
pub fn kib_field_bytes(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
