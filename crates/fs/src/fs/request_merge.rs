//! The block layer's request merging: blocks that are next to each other on the device (and
//! in the second coordinate, a tag or a logical block) go out as one request, up to the
//! device's largest transfer, as the kernel merges bios into a request below `max_sectors`.

/// Runs of `pairs` in which each entry is the previous one plus one in both coordinates, at
/// most `max` entries long: `(first pair, length)`, in order. (Tags wrap; so does the step.)
pub(super) fn merged_runs(pairs: &[(u64, u64)], max: u64) -> Vec<((u64, u64), u64)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < pairs.len() {
        let (a, b) = pairs[i];
        let mut n = 1u64;
        while i + (n as usize) < pairs.len()
            && n < max
            && pairs[i + n as usize] == (a.wrapping_add(n), b.wrapping_add(n))
        {
            n += 1;
        }
        runs.push(((a, b), n));
        i += n as usize;
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_break_at_gaps_and_at_the_largest_request() {
        let pairs = [(10, 100), (11, 101), (12, 102), (13, 200), (20, 201), (21, 202)];
        assert_eq!(merged_runs(&pairs, 8), vec![((10, 100), 3), ((13, 200), 1), ((20, 201), 2)]);
        assert_eq!(merged_runs(&pairs[..3], 2), vec![((10, 100), 2), ((12, 102), 1)]);
        assert!(merged_runs(&[], 4).is_empty());
    }
}
