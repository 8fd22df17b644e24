//! trimlab-trim's tests, one module per source module, in one test binary (the lib sets
//! `test = false`, so the crate compiles once in the test command). Run one file's tests with
//! `cargo test -p trimlab-trim --test trim FILE::`.

mod cost_model;
mod delayed;
mod engines;
mod immediate;
mod trim_bitmap;
mod trim_buffer;

/// A small page FTL (no write buffer) for engines' unit tests: an engine's file tests the
/// engine against real controller state.
pub fn test_controller_state(logical_pages: u32) -> (trimlab_ftl::PageFtl, trimlab_ftl::WriteBuffer) {
    let geometry = trimlab_nand::Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 32,
        pages_per_block: 16,
        page_bytes: 4096,
        flash_page_bytes: 4096,
    };
    let config = trimlab_ftl::FtlConfig {
        logical_pages,
        gc_free_blocks_min: 2,
        victim: trimlab_ftl::VictimPolicy::Greedy,
        track_data: true,
        multi_plane: false,
    };
    trimlab_ftl::PageFtl::check_config(&geometry, &config)
        .expect("the test geometry holds the logical pages");
    let ftl = trimlab_ftl::PageFtl::new(geometry, trimlab_nand::Timing::tlc_nvme(), config);
    (ftl, trimlab_ftl::WriteBuffer::new(0, 1))
}
