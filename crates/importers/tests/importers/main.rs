//! trimlab-importers' tests, one module per file, in one test binary: the lib has no test
//! harness of its own (Cargo.toml), so its tests are here and link the built lib (issue 41).
//! Run one file's tests with `cargo test -p trimlab-importers --test importers FILE::`.

mod filebench_fileset;
mod filebench_parser;
mod filebench_value;
mod fuzz_inputs;
mod input;
mod strace;
mod strace_calls;
mod strace_line;
mod strace_process;

use trimlab_device::{DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_fs::{FileSystem, FsConfig, PolicyKind};
use trimlab_sim::{ByteSize, SimTime};

/// A 48 MiB two-channel drive with a small-group ext4 under online discard: the file system the
/// strace replay tests and the fuzz targets replay into.
pub fn fs() -> FileSystem<Ssd> {
    let device = DeviceSection {
        channels: Some(2),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        pages_per_block: Some(64),
        logical_bytes: Some(ByteSize(48 << 20)),
        ..Default::default()
    };
    let ssd = Ssd::new(
        SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default()).expect("device"),
    );
    let config = FsConfig { blocks_per_group: 2048, inode_ratio_bytes: 65536, ..Default::default() }
        .with_policy(PolicyKind::Discard);
    FileSystem::mkfs(ssd, config, SimTime::ZERO, false).expect("mkfs")
}
