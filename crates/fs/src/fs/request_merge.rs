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

/// A stretch of pages to write: `len` blocks from `phys`, holding tags from `tag`.
pub(super) type Segment = (u64, u64, u64);

/// [`merged_runs`] for pages given as segments (`(phys, tag, len)`, a stretch of an extent
/// each), in the order the device sees pages, (physical block, tag): the requests that sorting
/// every page and merging it would give, at a cost per segment rather than per page.
pub(super) fn merged_segments(mut segments: Vec<Segment>, max: u64) -> Vec<Segment> {
    // Segments are cut at extent edges, so while no two overlap on the device, sorting them
    // orders every page as a sort of the pages would; two that overlap (never met: a block
    // mapped twice) fall back to the pages' sort.
    segments.sort_unstable();
    if segments.windows(2).any(|w| w[0].0 + w[0].2 > w[1].0) {
        segments = pages_sorted(&segments).into_iter().map(|(p, t)| (p, t, 1)).collect();
    }
    let mut out: Vec<Segment> = Vec::new();
    for (p, t, n) in segments {
        let mut done = 0;
        while done < n {
            let (p, t) = (p + done, t.wrapping_add(done));
            let k = match out.last_mut() {
                Some((p0, t0, len)) if *len < max && *p0 + *len == p && t0.wrapping_add(*len) == t => {
                    let k = (max - *len).min(n - done);
                    *len += k;
                    k
                }
                _ => {
                    let k = max.min(n - done);
                    out.push((p, t, k));
                    k
                }
            };
            done += k;
        }
    }
    out
}

/// The pages of `segments`, (physical block, tag), sorted one by one.
fn pages_sorted(segments: &[Segment]) -> Vec<(u64, u64)> {
    let mut pages: Vec<(u64, u64)> =
        segments.iter().flat_map(|&(p, t, n)| (0..n).map(move |i| (p + i, t.wrapping_add(i)))).collect();
    pages.sort_unstable();
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old write-back: every page sorted, then merged by `merged_runs`.
    fn merged_pages(segments: &[Segment], max: u64) -> Vec<Segment> {
        merged_runs(&pages_sorted(segments), max).into_iter().map(|((p, t), n)| (p, t, n)).collect()
    }

    #[test]
    fn runs_break_at_gaps_and_at_the_largest_request() {
        let pairs = [(10, 100), (11, 101), (12, 102), (13, 200), (20, 201), (21, 202)];
        assert_eq!(merged_runs(&pairs, 8), vec![((10, 100), 3), ((13, 200), 1), ((20, 201), 2)]);
        assert_eq!(merged_runs(&pairs[..3], 2), vec![((10, 100), 2), ((12, 102), 1)]);
        assert!(merged_runs(&[], 4).is_empty());
    }

    #[test]
    fn segments_give_the_requests_pages_sorted_one_by_one_give() {
        // A seeded xorshift: segments of a few pages, disjoint on the device or (one case in
        // four) overlapping, tags continuing or not, some near the wrap.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..400 {
            let overlap = case % 4 == 0;
            let mut segments = Vec::new();
            let mut p = 0;
            let mut t = u64::MAX - 40;
            for _ in 0..next(12) + 1 {
                let n = next(9) + 1;
                p = match overlap {
                    true => next(40),
                    false => p + next(3),
                };
                if next(3) > 0 {
                    t = t.wrapping_add(next(20));
                }
                segments.push((p, t, n));
                p += n;
                t = t.wrapping_add(n);
            }
            let max = next(10) + 1;
            assert_eq!(
                merged_segments(segments.clone(), max),
                merged_pages(&segments, max),
                "case {case}: {segments:?}, max {max}"
            );
        }
    }
}
