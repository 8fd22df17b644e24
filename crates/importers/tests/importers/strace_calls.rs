//! strace replay's system calls: fallocate's mode read by flag name, by number or both.

use trimlab_importers::strace::replayer::calls::{fallocate_mode, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE};

#[test]
fn fallocate_modes_by_name_number_or_both() {
    assert_eq!(fallocate_mode("0"), 0);
    assert_eq!(fallocate_mode("FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE"), KEEP_SIZE | PUNCH_HOLE);
    assert_eq!(fallocate_mode("3"), KEEP_SIZE | PUNCH_HOLE);
    assert_eq!(fallocate_mode("0x10"), ZERO_RANGE);
    assert_eq!(fallocate_mode("FALLOC_FL_KEEP_SIZE|0x80"), KEEP_SIZE | 0x80);
    assert_eq!(fallocate_mode("FALLOC_FL_ZERO_RANGE"), ZERO_RANGE);
}
