//! The resolution of `[device]`, `[ftl]` and `[trim]`: presets, capacity fits and the key
//! each error names.

use trimlab_device::config::*;
use trimlab_ftl::VictimPolicy;
use trimlab_sim::ByteSize;
use trimlab_trim::TrimCostOverrides;

fn resolve(device: DeviceSection) -> Result<SsdConfig, ConfigError> {
    SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())
}

/// Issue 26: i64::MAX as a cost wrapped the simulated clock (an event-queue panic in run,
/// sweep and Python); every cost is bounded and the error names its key.
#[test]
fn costs_the_clock_cannot_hold_are_refused_with_their_key() {
    let big = i64::MAX as u64;
    let small = || DeviceSection { logical_bytes: Some(ByteSize(64 << 20)), ..Default::default() };
    let cases: [(&str, DeviceSection); 8] = [
        ("device.firmware_ns", DeviceSection { firmware_ns: Some(big), ..small() }),
        ("device.read_ns", DeviceSection { read_ns: Some(big), ..small() }),
        ("device.program_ns", DeviceSection { program_ns: Some(big), ..small() }),
        ("device.erase_ns", DeviceSection { erase_ns: Some(big), ..small() }),
        ("device.command_ns", DeviceSection { command_ns: Some(big), ..small() }),
        ("device.transfer_ps_per_byte", DeviceSection { transfer_ps_per_byte: Some(big), ..small() }),
        (
            "device.host_transfer_ps_per_byte",
            DeviceSection { host_transfer_ps_per_byte: Some(big), ..small() },
        ),
        ("device.max_transfer_bytes", DeviceSection { max_transfer_bytes: Some(ByteSize(big)), ..small() }),
    ];
    for (key, device) in cases {
        let e = resolve(device).unwrap_err();
        assert_eq!(e.key, key, "{e}");
        assert_eq!(e.value, big.to_string());
        assert!(e.to_string().contains("at most"), "{e}");
    }
    let trim = TrimSection {
        cost: Some(TrimCostOverrides { map_invalidate_ns: Some(big), ..Default::default() }),
        ..Default::default()
    };
    let e = SsdConfig::resolve(&small(), &FtlSection::default(), &trim).unwrap_err();
    assert_eq!(e.key, "trim.cost.map_invalidate_ns", "{e}");
    let at_limit = DeviceSection { firmware_ns: Some(OPERATION_NS_MAX), ..small() };
    assert_eq!(resolve(at_limit).unwrap().firmware_ns, OPERATION_NS_MAX);
}

#[test]
fn default_preset_sizes_flash_from_logical_and_spare() {
    let c = resolve(DeviceSection { spare_factor: Some(0.10), ..Default::default() }).unwrap();
    assert_eq!(c.logical_bytes(), 8 << 30);
    // Flash comes in whole rows of one block per plane (64 MiB here), so the resolved spare
    // factor is the requested one rounded up to the next row.
    let row = (c.geometry.plane_count() * c.geometry.pages_per_block as usize) as f64;
    let slack = row / c.geometry.physical_pages() as f64;
    assert!(c.spare_factor >= 0.10 && c.spare_factor < 0.10 + slack, "{}", c.spare_factor);
}

#[test]
fn k9lag_preset_derives_logical_from_flash() {
    let c = resolve(DeviceSection { preset: Some("k9lag08u0m-4ch".into()), ..Default::default() }).unwrap();
    assert_eq!(c.geometry.physical_bytes(), 8 << 30);
    assert_eq!(c.gc_free_blocks_min, 615); // 30 % of 2048, rounded up
    assert!(!c.trim_queued);
}

#[test]
fn spare_factor_of_one_is_refused_by_name() {
    let e = resolve(DeviceSection { spare_factor: Some(1.0), ..Default::default() }).unwrap_err();
    assert_eq!(e.key, "device.spare_factor");
    assert!(e.to_string().contains("must be > 0 and < 1"), "{e}");
}

#[test]
fn zero_pages_per_block_is_refused_by_name() {
    let e = resolve(DeviceSection { pages_per_block: Some(0), ..Default::default() }).unwrap_err();
    assert_eq!(e.to_string(), "config: device.pages_per_block = 0 (must be 1..=65536)");
}

#[test]
fn unknown_preset_lists_the_choices() {
    let e = resolve(DeviceSection { preset: Some("floppy".into()), ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("nvme-tlc") && e.to_string().contains("k9lag08u0m-4ch"), "{e}");
}

#[test]
fn both_logical_and_blocks_is_refused() {
    let e = resolve(DeviceSection {
        logical_bytes: Some(ByteSize(1 << 30)),
        blocks_per_plane: Some(100),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(e.key, "device.blocks_per_plane");
}

#[test]
fn every_preset_fits_64_mib_to_4_tib_with_only_logical_and_spare() {
    for info in preset_infos() {
        // A preset with a larger mapping unit (qlc-ssd: 16 pages) needs as many times the
        // capacity for the same count of units, and so of blocks, as the 4-block reserve needs.
        let per_unit = resolve(DeviceSection { preset: Some(info.name.into()), ..Default::default() })
            .map_or(1, |c| c.pages_per_unit());
        let mut logical: u64 = (64 << 20) * per_unit;
        while logical <= 4 << 40 {
            let c = resolve(DeviceSection {
                preset: Some(info.name.into()),
                logical_bytes: Some(ByteSize(logical)),
                spare_factor: Some(0.07),
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("{} at {logical} B: {e}", info.name));
            assert_eq!(c.logical_bytes(), logical);
            assert!(c.spare_warning().is_none(), "{} at {logical} B: {:?}", info.name, c.spare_warning());
            logical *= 4;
        }
    }
}

#[test]
fn one_gib_on_the_default_preset_is_fitted_and_says_so() {
    let c = resolve(DeviceSection { logical_bytes: Some(ByteSize(1 << 30)), ..Default::default() }).unwrap();
    assert!(c.spare_factor_seen_by_gc() >= MIN_SPARE_SEEN_SHARE * 0.07, "{}", c.spare_factor_seen_by_gc());
    assert!(c.geometry.plane_count() < 64, "{:?}", c.geometry);
    assert!(c.geometry_note.contains("fitted"), "{}", c.geometry_note);
    // The preset's own capacity keeps the preset's shape.
    let d = resolve(DeviceSection::default()).unwrap();
    assert_eq!(d.geometry.plane_count(), 64);
    assert!(d.geometry_note.is_empty());
}

#[test]
fn four_gib_no_longer_hides_a_halved_spare() {
    // Before the fit, GC saw 0.030 of the 0.07 asked for here, silently.
    let c = resolve(DeviceSection { logical_bytes: Some(ByteSize(4 << 30)), ..Default::default() }).unwrap();
    assert!(c.spare_factor_seen_by_gc() >= 0.049, "{}", c.spare_factor_seen_by_gc());
}

#[test]
fn a_pinned_shape_that_starves_gc_warns() {
    let device = DeviceSection {
        logical_bytes: Some(ByteSize(1 << 30)),
        channels: Some(8),
        chips_per_channel: Some(2),
        dies_per_chip: Some(2),
        planes_per_die: Some(2),
        pages_per_block: Some(256),
        spare_factor: Some(0.25),
        ..Default::default()
    };
    let ftl = FtlSection { gc_free_blocks: Some(GcThreshold::Blocks(4)), ..Default::default() };
    let c = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap();
    let w = c.spare_warning().expect("22 blocks a plane with 4.5 idle is a visible share");
    assert!(w.contains("nominal") && w.contains("64 planes"), "{w}");
}

#[test]
fn presets_carry_trim_costs_and_their_sources() {
    for info in preset_infos() {
        assert!(!info.trim_source.is_empty(), "{}", info.name);
        assert!(
            info.trim_source.contains("github.com") || info.trim_source.contains("assumption"),
            "{}: a source must cite a measurement or say assumption",
            info.name
        );
    }
    let nvme = resolve(DeviceSection::default()).unwrap();
    assert_eq!(nvme.trim_cost, TrimCostModel::nvme_fio());
    let sata = resolve(DeviceSection { preset: Some("sata-mlc-2011".into()), ..Default::default() }).unwrap();
    assert!(!sata.trim_queued);
    assert!(sata.trim_cost.command_ns >= 1_000_000);
    // An explicit [trim] cost still wins over the preset's.
    let own = SsdConfig::resolve(
        &DeviceSection::default(),
        &FtlSection::default(),
        &TrimSection {
            cost: Some(TrimCostOverrides::all(&TrimCostModel::openssd_002())),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(own.trim_cost, TrimCostModel::default());
}

#[test]
fn flash_pages_come_from_the_preset_and_bad_combinations_name_their_key() {
    let c = resolve(DeviceSection::default()).unwrap();
    assert_eq!((c.geometry.page_bytes, c.geometry.flash_page_bytes), (4096, 16384));
    assert!(c.multi_plane);
    // A config written before flash pages existed keeps its meaning.
    let old =
        resolve(DeviceSection { page_bytes: Some(4096), pages_per_block: Some(64), ..Default::default() })
            .unwrap();
    assert_eq!((old.geometry.pages_per_block, old.geometry.pages_per_flash_page()), (64, 4));
    // A mapping page larger than the preset's flash page takes the flash page with it.
    let big = resolve(DeviceSection { page_bytes: Some(65536), ..Default::default() }).unwrap();
    assert_eq!(big.geometry.flash_page_bytes, 65536);
    let e = resolve(DeviceSection { flash_page_bytes: Some(2048), ..Default::default() }).unwrap_err();
    assert_eq!(e.key, "device.flash_page_bytes");
    assert!(e.to_string().contains("multiple of device.page_bytes = 4096"), "{e}");
    let e = resolve(DeviceSection { pages_per_block: Some(6), ..Default::default() }).unwrap_err();
    assert_eq!(
        e.to_string(),
        "config: device.pages_per_block = 6 (must be a multiple of the 4 pages a flash page holds: a block is whole flash pages)"
    );
    let k9 = resolve(DeviceSection { preset: Some("k9lag08u0m-4ch".into()), ..Default::default() }).unwrap();
    assert_eq!(k9.geometry.pages_per_flash_page(), 1);
    assert!(!k9.multi_plane);
}

#[test]
fn a_huge_page_blames_page_bytes_not_the_gc_threshold() {
    // Issue 13 item 11: this reported `ftl.gc_free_blocks = 2`. Since the flash shape is
    // fitted to the capacity (fidelity), a 1 MiB page fits the preset's 8 GiB on fewer
    // planes instead of failing, and says so.
    let c = resolve(DeviceSection { page_bytes: Some(1 << 20), ..Default::default() }).unwrap();
    assert!(c.geometry_note.contains("fitted"), "{}", c.geometry_note);
    // A GC threshold the user did set is still the key named.
    let ftl = FtlSection { gc_free_blocks: Some(GcThreshold::Blocks(100_000)), ..Default::default() };
    let e = SsdConfig::resolve(&DeviceSection::default(), &ftl, &TrimSection::default()).unwrap_err();
    assert_eq!(e.key, "ftl.gc_free_blocks");
}

/// Issue 27: a drive beyond 32-bit page addresses is a config error naming the key to change
/// and the way out (a larger mapping unit), never a wrapped address; the same capacity in a
/// unit that fits resolves.
#[test]
fn drives_beyond_32_bit_page_addresses_are_refused_by_name() {
    let qlc = |unit: u64| {
        let device = DeviceSection {
            preset: Some("qlc-ssd".into()),
            logical_bytes: Some(ByteSize(61_440_000_000_000)),
            ..Default::default()
        };
        let ftl = FtlSection { mapping_unit: Some(ByteSize(unit)), ..Default::default() };
        SsdConfig::resolve(&device, &ftl, &TrimSection::default())
    };
    let e = qlc(4096).unwrap_err();
    assert_eq!(e.key, "device.logical_bytes", "{e}");
    assert!(e.accepted.contains("mapping_unit") && e.accepted.contains("4294967294"), "{e}");
    let fits = qlc(65536).expect("61.44 TB in 64 KiB units fits 32-bit addresses");
    assert_eq!(fits.logical_pages, 937_500_000);
    let e = resolve(DeviceSection {
        blocks_per_plane: Some(1 << 24),
        pages_per_block: Some(65536),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!((e.key.as_str(), e.value.as_str()), ("device.blocks_per_plane", "16777216"), "{e}");
    assert!(e.accepted.contains("mapping_unit"), "{e}");
    // A capacity given in logical_bytes is the key named, not a size derived from it.
    let e =
        resolve(DeviceSection { logical_bytes: Some(ByteSize(1 << 50)), ..Default::default() }).unwrap_err();
    assert_eq!(e.key, "device.logical_bytes", "{e}");
    assert!(e.accepted.contains("mapping_unit") && e.accepted.contains("274877906944 mapping units"), "{e}");
    let many_blocks = DeviceSection {
        logical_bytes: Some(ByteSize(16 << 40)),
        channels: Some(1),
        pages_per_block: Some(16),
        ..Default::default()
    };
    let ftl = FtlSection { mapping_unit: Some(ByteSize(65536)), ..Default::default() };
    let e = SsdConfig::resolve(&many_blocks, &ftl, &TrimSection::default()).unwrap_err();
    assert_eq!(e.key, "device.logical_bytes", "{e}");
    assert!(e.accepted.contains("blocks per plane") && e.accepted.contains("pages_per_block"), "{e}");
}

/// `[trim]` reads each engine's section through the engine's own keys: a bad key or value is
/// refused by its full name, a section no engine owns lists what `[trim]` accepts, and the
/// section is written back as read.
#[test]
fn trim_engine_sections_are_read_by_their_engines() {
    let read = |text: &str| toml::from_str::<TrimSection>(text).map_err(|e| e.to_string());
    let ok = read("engine = \"delayed\"\n[delayed]\nbefore_gc = \"512MiB\"\n").unwrap();
    assert_eq!(ok.engines[&EngineKind::Delayed]["before_gc"].as_str(), Some("512MiB"));
    let text = toml::to_string(&ok).unwrap();
    assert_eq!(read(&text), Ok(ok), "written back as read: {text}");
    let e = read("[delayed]\nbefor_gc = \"all\"\n").unwrap_err();
    assert!(e.contains("trim.delayed.befor_gc: no such key") && e.contains("before_gc, bitmap"), "{e}");
    let e = read("[delayed]\nbefore_gc = \"lots\"\n").unwrap_err();
    assert!(e.contains("trim.delayed.before_gc: \"lots\"") && e.contains("512MiB"), "{e}");
    let e = read("[nosuch]\nkey = 4\n").unwrap_err();
    assert!(
        e.contains("trim.nosuch: no such key or engine section; [trim] accepts: engine, cost, delayed"),
        "{e}"
    );
    let e = read("[immediate]\nx = 1\n").unwrap_err();
    assert!(e.contains("trim.immediate: no such key"), "an engine without keys has no section: {e}");
}

/// The resolved config carries every keyed engine's section completed, where `trim_delayed`
/// always was (the config hash and echo keep their keys); a bad key is refused by its name.
#[test]
fn engine_keys_resolve_complete_and_checked() {
    let trim = TrimSection {
        engine: Some(EngineKind::Delayed),
        engines: TrimSection::keys_of(EngineKind::Delayed, Some(&toml::toml! { idle_chunk_pages = 8 })),
        ..Default::default()
    };
    let c = SsdConfig::resolve(&DeviceSection::default(), &FtlSection::default(), &trim).unwrap();
    let keys = c.trim_keys.of(EngineKind::Delayed);
    assert_eq!(keys["idle_chunk_pages"].as_integer(), Some(8));
    assert_eq!(keys["before_gc"].as_str(), Some("all"), "defaults filled in");
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["trim_delayed"]["idle_chunk_pages"], 8, "{json}");
    let bad = TrimSection {
        engines: TrimSection::keys_of(EngineKind::Delayed, Some(&toml::toml! { idle_chunk_pages = 0 })),
        ..Default::default()
    };
    let e = SsdConfig::resolve(&DeviceSection::default(), &FtlSection::default(), &bad).unwrap_err();
    assert_eq!((e.key.as_str(), e.value.as_str()), ("trim.delayed.idle_chunk_pages", "0"));
}

/// Issue 39: the rating comes from the preset and the user's keys; only the user's enter the
/// serialized config (so the hash), and bad or unpaired values name their key.
#[test]
fn ratings_come_from_the_preset_and_bad_ones_name_their_key() {
    let small = || DeviceSection { logical_bytes: Some(ByteSize(64 << 20)), ..Default::default() };
    let c = resolve(small()).unwrap();
    assert_eq!(c.rating.pe_cycles, Some(3000));
    assert_eq!(c.rating.drive_writes(), Some(600.0));
    assert_eq!(c.rating_set, trimlab_device::lifetime::Rating::default(), "nothing the user set");
    let mine = resolve(DeviceSection { rated_pe_cycles: Some(10_000), ..small() }).unwrap();
    assert_eq!((mine.rating.pe_cycles, mine.rating_set.pe_cycles), (Some(10_000), Some(10_000)));
    let cases: [(&str, DeviceSection); 4] = [
        ("device.rated_pe_cycles", DeviceSection { rated_pe_cycles: Some(0), ..small() }),
        ("device.rated_dwpd", DeviceSection { rated_dwpd: Some(-1.0), rated_years: Some(5.0), ..small() }),
        ("device.rated_dwpd", DeviceSection { rated_dwpd: Some(1.0), ..small() }),
        (
            "device.rated_tbw",
            DeviceSection { preset: Some("qlc-ssd".into()), rated_tbw: Some(ByteSize(1 << 40)), ..small() },
        ),
    ];
    for (key, device) in cases {
        assert_eq!(resolve(device).unwrap_err().key, key);
    }
}

/// `[ftl] static_wl`: off unless set, the threshold's default MQSim's, and the pairs it does
/// not go with refused by name.
#[test]
fn static_wear_levelling_resolves_and_refuses_by_name() {
    let device = DeviceSection { logical_bytes: Some(ByteSize(64 << 20)), ..Default::default() };
    let with = |ftl: FtlSection| SsdConfig::resolve(&device, &ftl, &TrimSection::default());
    assert_eq!(with(FtlSection::default()).unwrap().ftl.static_wl_threshold, None);
    let on = FtlSection { static_wl: Some(true), ..Default::default() };
    assert_eq!(with(on.clone()).unwrap().ftl.static_wl_threshold, Some(100));
    let refused = [
        (
            FtlSection { static_wl_threshold: Some(5), ..Default::default() },
            "ftl.static_wl_threshold",
            "only with",
        ),
        (FtlSection { static_wl_threshold: Some(0), ..on.clone() }, "ftl.static_wl_threshold", "at least 1"),
        (FtlSection { gc_victim: Some(VictimPolicy::Fifo), ..on.clone() }, "ftl.static_wl", "fifo"),
        (
            FtlSection { kind: Some(trimlab_device::FtlKind::Hybrid), ..on.clone() },
            "ftl.static_wl",
            "only read by ftl.kind = \"page\"",
        ),
    ];
    for (ftl, key, why) in refused {
        let e = with(ftl).unwrap_err();
        assert_eq!(e.key, key, "{e}");
        assert!(e.to_string().contains(why), "{e}");
    }
}
