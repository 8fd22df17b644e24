//! A write's (or an fallocate's) range checked against the file system's size before the
//! model walks it: the model looks for the range's holes block by block, so a write of
//! 2^63 bytes (a hostile strace return value, `create f size=1PiB`, a Filebench append)
//! would take days before it found there is no space. A range that cannot fit even an empty
//! file system is refused at once with the error the model would have given.

use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError, Ino};

/// `Err(NoSpace)` when `bytes` at `offset` of `ino` need more new blocks than the whole file
/// system has (the blocks the file already maps are the most the range can reuse); Ok when
/// the model must decide (it then walks at most the file system's size).
pub fn check_fits<D: BlockDevice>(
    fs: &FileSystem<D>,
    ino: Ino,
    offset: u64,
    bytes: u64,
) -> Result<(), FsError> {
    let bs = fs.config().block_bytes.max(1);
    let Some(end) = offset.checked_add(bytes) else { return Err(FsError::NoSpace) };
    let blocks = end.div_ceil(bs) - offset / bs;
    let data = fs.data_blocks();
    // Every ordinary write stops here, without looking at the file.
    if blocks <= data {
        return Ok(());
    }
    let mapped: u64 = fs.file_runs(ino).iter().map(|r| r.len).sum();
    match blocks.saturating_sub(mapped) > data {
        true => Err(FsError::NoSpace),
        false => Ok(()),
    }
}
