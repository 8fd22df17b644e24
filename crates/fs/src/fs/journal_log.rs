//! jbd2's circular log as fs/jbd2 keeps it: head, tail and free space, the committed
//! transactions still on the checkpoint list (each with the buffers it logged last and has not
//! seen written home), the transaction cap and the space a new handle needs.
//!
//! Pure bookkeeping: the file system (journal.rs) turns what it says into device commands.
//! Positions count log blocks from the journal's first log block: an internal journal's
//! superblock is its block 0 and the log its blocks 1..len (mke2fs writes `s_first = 1`,
//! e2fsprogs lib/ext2fs/mkjournal.c ext2fs_create_journal_superblock2; jbd2's `j_first`,
//! `j_last`). XFS's and btrfs' stand-ins have no superblock: their log is the whole area.

use std::collections::{BTreeMap, VecDeque};

/// jbd2_log_space_left (include/linux/jbd2.h) keeps 32 blocks back "for rounding errors".
const SPACE_SLACK_BLOCKS: u64 = 32;

/// A committed transaction on the checkpoint list (jbd2's `j_checkpoint_transactions`).
#[derive(Debug)]
struct Logged {
    tid: u64,
    /// `t_log_start`: where its descriptor block went.
    start: u64,
    /// Its checkpoint list: the buffers it logged, in the commit's order. A buffer logged again
    /// by a later commit leaves it (jbd2_journal_commit_transaction ->
    /// `__jbd2_journal_remove_checkpoint`); [`JournalLog::owner`] says which it still holds.
    blocks: Vec<u64>,
    /// `blocks[..gone]` have left its list for good: a buffer leaves once logged again (its
    /// owner only moves to newer transactions) or written home (it is dirty again only by a
    /// later commit, which also takes it over). So [`JournalLog::drop_clean`] resumes here
    /// instead of walking every transaction's buffers at every commit.
    gone: usize,
}

/// The log's state.
#[derive(Debug)]
pub(super) struct JournalLog {
    /// Journal blocks, superblock included (`j_total_len`).
    len: u64,
    /// The first log block: 1 after jbd2's superblock, 0 for a stand-in without one.
    first: u64,
    /// Next log position to write (`j_head`), in 0..len-1.
    head: u64,
    /// Oldest position still needed (`j_tail`).
    tail: u64,
    /// `j_free`: log blocks between head and tail.
    free: u64,
    /// Log blocks the commit in flight has reserved and not yet written (its
    /// `t_outstanding_credits`, which jbd2_log_space_left counts as used).
    committing_reserved: u64,
    /// Where the commit in flight started (`t_log_start`), for the tail while it runs.
    committing_start: Option<(u64, u64)>,
    checkpoint: VecDeque<Logged>,
    /// Buffer -> the newest committed transaction that logged it (`b_cp_transaction`).
    owner: BTreeMap<u64, u64>,
    /// The tail's transaction id as the journal superblock has it (`j_tail_sequence`).
    tail_tid: u64,
}

impl JournalLog {
    /// An empty log whose next transaction is `first_tid` (journal_reset: `j_tail_sequence`
    /// is the next transaction's).
    pub(super) fn new(len: u64, jbd2: bool, first_tid: u64) -> JournalLog {
        let first = u64::from(jbd2);
        let log = len.saturating_sub(first).max(1);
        JournalLog {
            len,
            first,
            head: 0,
            tail: 0,
            free: log,
            committing_reserved: 0,
            committing_start: None,
            checkpoint: VecDeque::new(),
            owner: BTreeMap::new(),
            tail_tid: first_tid,
        }
    }

    /// Log blocks (`j_last - j_first`).
    pub(super) fn log_blocks(&self) -> u64 {
        self.len.saturating_sub(self.first).max(1)
    }

    /// Whether the journal has jbd2's superblock (ext4), and so jbd2's rules.
    pub(super) fn has_superblock(&self) -> bool {
        self.first == 1
    }

    /// `j_max_transaction_buffers` = jbd2_journal_get_max_txn_bufs: a quarter of the journal
    /// (fs/jbd2/journal.c; no fast-commit area, mke2fs' default).
    pub(super) fn max_transaction_blocks(&self) -> u64 {
        (self.len / 4).max(1)
    }

    /// jbd2_log_space_left: free log blocks less the slack and the commit in flight's.
    pub(super) fn space_left(&self) -> u64 {
        self.free.saturating_sub(SPACE_SLACK_BLOCKS).saturating_sub(self.committing_reserved)
    }

    pub(super) fn free(&self) -> u64 {
        self.free
    }

    #[cfg(test)]
    pub(super) fn head(&self) -> u64 {
        self.head
    }

    /// A commit starts: it will write `blocks` log blocks from the head.
    pub(super) fn commit_started(&mut self, tid: u64, blocks: u64) {
        self.committing_reserved = blocks;
        self.committing_start = Some((tid, self.head));
    }

    /// Writes `blocks` log blocks at the head: the journal-relative block ranges (position p
    /// is journal block `first + p`), cut where the log wraps. A write larger than the free
    /// space (only a stand-in's commit larger than its whole area: ext4's handles cap
    /// transactions and make room first) overwrites the oldest blocks, and the log is full.
    pub(super) fn write(&mut self, blocks: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut left = blocks;
        while left > 0 {
            let n = left.min(self.log_blocks() - self.head);
            out.push((self.first + self.head, n));
            self.head = (self.head + n) % self.log_blocks();
            left -= n;
        }
        self.committing_reserved = self.committing_reserved.saturating_sub(blocks);
        if blocks > self.free {
            self.tail = self.head;
            self.free = 0;
        } else {
            self.free -= blocks;
        }
        out
    }

    /// Every committed buffer was written home at once: the log starts over at the head.
    pub(super) fn emptied(&mut self) {
        self.checkpoint.clear();
        self.owner.clear();
        self.tail = self.head;
        self.free = self.log_blocks();
    }

    /// The commit block is on disk: the transaction's buffers join its checkpoint list,
    /// leaving those of older transactions.
    pub(super) fn committed(&mut self, tid: u64, blocks: Vec<u64>) {
        let start = match self.committing_start.take() {
            Some((t, s)) if t == tid => s,
            _ => self.head,
        };
        self.committing_reserved = 0;
        for &b in &blocks {
            self.owner.insert(b, tid);
        }
        self.checkpoint.push_back(Logged { tid, start, blocks, gone: 0 });
    }

    /// Whether `b` is still on transaction `tid`'s checkpoint list and dirty.
    fn holds(&self, tid: u64, b: u64, dirty: &impl Fn(u64) -> bool) -> bool {
        self.owner.get(&b) == Some(&tid) && dirty(b)
    }

    /// `__jbd2_journal_clean_checkpoint_list`: transactions whose buffers are all clean or
    /// logged again later leave the checkpoint list (jbd2 drops a transaction once its list
    /// is empty).
    pub(super) fn drop_clean(&mut self, dirty: impl Fn(u64) -> bool) {
        let owner = &mut self.owner;
        self.checkpoint.retain_mut(|t| {
            let tid = t.tid;
            while t.gone < t.blocks.len()
                && !(owner.get(&t.blocks[t.gone]) == Some(&tid) && dirty(t.blocks[t.gone]))
            {
                t.gone += 1;
            }
            if t.gone < t.blocks.len() {
                return true;
            }
            // Its buffers no longer name it as theirs.
            for b in &t.blocks {
                if owner.get(b) == Some(&tid) {
                    owner.remove(b);
                }
            }
            false
        });
    }

    /// The oldest checkpoint transaction's dirty buffers (jbd2_log_do_checkpoint's walk of
    /// `j_checkpoint_transactions`), or None when the list is empty.
    pub(super) fn oldest_dirty(&self, dirty: impl Fn(u64) -> bool) -> Option<(u64, Vec<u64>)> {
        let t = self.checkpoint.front()?;
        Some((t.tid, t.blocks[t.gone..].iter().copied().filter(|&b| self.holds(t.tid, b, &dirty)).collect()))
    }

    /// jbd2_journal_get_log_tail: the new tail (its tid and position) if it moved past the
    /// current one: the oldest checkpoint transaction's start, else the commit in flight's,
    /// else the head.
    pub(super) fn log_tail(&self, running_tid: u64) -> Option<(u64, u64)> {
        let (tid, pos) = if let Some(t) = self.checkpoint.front() {
            (t.tid, t.start)
        } else if let Some((t, s)) = self.committing_start {
            (t, s)
        } else {
            (running_tid, self.head)
        };
        (tid > self.tail_tid).then_some((tid, pos))
    }

    /// Blocks a move of the tail to `pos` frees (`__jbd2_update_log_tail`'s `freed`).
    pub(super) fn freed_by(&self, pos: u64) -> u64 {
        let log = self.log_blocks();
        let d = (pos + log - self.tail) % log;
        if d == 0 && self.free == 0 && self.checkpoint.is_empty() && self.committing_start.is_none() {
            log
        } else {
            d
        }
    }

    /// `__jbd2_update_log_tail`: the journal superblock now says the log starts at `pos`.
    pub(super) fn move_tail(&mut self, tid: u64, pos: u64) {
        self.free = (self.free + self.freed_by(pos)).min(self.log_blocks());
        self.tail = pos;
        self.tail_tid = tid;
    }

    /// Transactions on the checkpoint list.
    pub(super) fn checkpoint_transactions(&self) -> usize {
        self.checkpoint.len()
    }

    /// The log's own consistency: head and tail inside it, no more free than it has, and the
    /// used part (head - tail) matching the free count.
    pub(super) fn check(&self) -> Result<(), String> {
        let log = self.log_blocks();
        let used = (self.head + log - self.tail) % log;
        if self.head >= log || self.tail >= log || self.free > log || !(used + self.free).is_multiple_of(log)
        {
            return Err(format!(
                "fs: journal head {} tail {} free {} outside its {} log blocks",
                self.head, self.tail, self.free, log
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_tail_moves_past_transactions_whose_buffers_are_home_or_logged_again() {
        let mut log = JournalLog::new(1024, true, 1);
        assert_eq!((log.log_blocks(), log.max_transaction_blocks()), (1023, 256));
        assert_eq!(log.space_left(), 1023 - 32);
        log.commit_started(1, 11);
        assert_eq!(log.space_left(), 1023 - 32 - 11, "the commit in flight's blocks count as used");
        assert_eq!(log.write(10), vec![(1, 10)]);
        log.write(1);
        log.committed(1, vec![100, 101, 102]);
        log.commit_started(2, 4);
        log.write(4);
        log.committed(2, vec![101, 102]);
        // Transaction 1 still holds 100 (101 and 102 were logged again by 2).
        let dirty = |b: u64| [100, 101, 102].contains(&b);
        assert_eq!(log.oldest_dirty(dirty), Some((1, vec![100])));
        assert_eq!(log.log_tail(3), None, "the tail is transaction 1's start, where it is");
        let not_100 = |b: u64| b != 100;
        log.drop_clean(not_100);
        assert_eq!(log.log_tail(3), Some((2, 11)));
        assert_eq!(log.freed_by(11), 11);
        log.move_tail(2, 11);
        assert_eq!(log.free(), 1023 - 4);
        log.check().unwrap();
        // Everything clean: the tail goes to the head.
        log.drop_clean(|_| false);
        assert_eq!(log.log_tail(3), Some((3, 15)));
        log.move_tail(3, 15);
        assert_eq!(log.free(), 1023);
        log.check().unwrap();
    }

    #[test]
    fn writes_wrap_at_the_end_of_the_log_and_skip_the_superblock() {
        let mut log = JournalLog::new(100, true, 0);
        log.write(90);
        log.move_tail(1, 90);
        assert_eq!(log.write(20), vec![(91, 9), (1, 11)]);
        assert_eq!(log.head(), 11);
        log.check().unwrap();
    }
    /// The old drop_clean, which walked every transaction's buffers: the resumed walk must
    /// keep the same transactions and checkpoint the same buffers.
    fn drop_clean_by_full_walk(
        txs: &mut Vec<(u64, Vec<u64>)>,
        owner: &mut BTreeMap<u64, u64>,
        dirty: &BTreeSet<u64>,
    ) {
        for (tid, blocks) in txs.iter_mut() {
            blocks.retain(|b| owner.get(b) == Some(tid) && dirty.contains(b));
        }
        txs.retain(|(_, blocks)| !blocks.is_empty());
        owner.retain(|_, t| txs.iter().any(|(tid, _)| tid == t));
    }

    #[test]
    fn drop_clean_keeps_what_a_walk_of_every_buffer_keeps() {
        let mut log = JournalLog::new(1 << 20, true, 1);
        let (mut txs, mut owner, mut dirty) = (Vec::new(), BTreeMap::new(), BTreeSet::new());
        // A seeded xorshift: commits of a few of 40 buffers, write-back of some dirty ones.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for tid in 1..400 {
            let blocks: Vec<u64> =
                (0..next() % 6).map(|_| next() % 40).collect::<BTreeSet<_>>().into_iter().collect();
            for &b in &blocks {
                owner.insert(b, tid);
                dirty.insert(b);
            }
            log.committed(tid, blocks.clone());
            txs.push((tid, blocks));
            let home: Vec<u64> = dirty.iter().copied().filter(|_| next() % 4 == 0).collect();
            for b in home {
                dirty.remove(&b);
            }
            log.drop_clean(|b| dirty.contains(&b));
            drop_clean_by_full_walk(&mut txs, &mut owner, &dirty);
            assert_eq!(log.checkpoint_transactions(), txs.len(), "after commit {tid}");
            assert_eq!(log.oldest_dirty(|b| dirty.contains(&b)), txs.first().cloned(), "after commit {tid}");
            let held: Vec<(u64, u64)> = log.owner.iter().map(|(&b, &t)| (b, t)).collect();
            assert_eq!(held, owner.iter().map(|(&b, &t)| (b, t)).collect::<Vec<_>>(), "after commit {tid}");
        }
    }
}
