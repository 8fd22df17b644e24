//! NVMe identify and SMART reports read into `[device]` keys, bad reports naming the file and field.

use trimlab_device::config::nvme_id::*;
use trimlab_device::config::DeviceSection;
use trimlab_sim::ByteSize;

fn parse(kind: ReportKind, text: &str) -> Report {
    Report::parse(kind, "t.json", text).unwrap()
}

#[test]
fn each_field_maps_to_its_key() {
    let ctrl =
        parse(ReportKind::IdCtrl, r#"{"mn":"X ","mdts":5,"maxcmd":0,"oncs":95,"tnvmcap":"1000000000000"}"#);
    let nvm = parse(ReportKind::NvmIdCtrl, r#"{"dmrl":64,"dmrsl":0,"dmsl":2097152}"#);
    let ns = parse(
        ReportKind::IdNs,
        r#"{"nsze":1000,"nsfeat":16,"flbas":1,"dlfeat":9,"npdg":63,"npda":63,"lbafs":[{"ds":9},{"ds":12}]}"#,
    );
    let import = Import::of_reports(&[ctrl, nvm, ns]).unwrap();
    let s = &import.section;
    assert_eq!(s.logical_bytes, Some(ByteSize(1000 * 4096)));
    assert_eq!(s.max_transfer_bytes, Some(ByteSize(128 << 10)));
    assert_eq!(s.queue_depth, None, "maxcmd 0 is not reported");
    assert_eq!(s.trim_max_ranges, Some(64));
    assert_eq!(s.trim_max_bytes, Some(ByteSize(2_097_152 * 4096)));
    assert_eq!(s.trim_granularity_bytes, Some(ByteSize(64 * 4096)));
    assert_eq!(import.model, "X");
    assert!(import.read.iter().any(|l| l.starts_with("dlfeat = 9: a deallocated block reads zeroes")));
    let mut keys: Vec<_> = import.mapped.iter().map(|m| m.key).collect();
    let mut set = s.set_keys();
    keys.sort();
    set.sort();
    assert_eq!(set, keys, "every set key is listed once");
}

#[test]
fn the_wear_counters_give_a_rating_only_when_it_means_something() {
    let smart = |used: u64| {
        parse(
            ReportKind::Smart,
            &format!(
                r#"{{"smartctl":{{}},"user_capacity":{{"bytes":1000000000000}},"nvme_smart_health_information_log":{{"percentage_used":{used},"data_units_written":1000000,"power_on_hours":2400}}}}"#
            ),
        )
    };
    let import = Import::of_reports(&[smart(20)]).unwrap();
    // 512 GB written is 20 % of the life: 2.56 PB rated; over 100 days, 5.12 GB a day.
    assert_eq!(import.section.rated_tbw, Some(ByteSize(2_560_000_000_000)));
    assert_eq!(import.section.rated_capacity, Some(ByteSize(1_000_000_000_000 / 4096 * 4096)));
    assert_eq!(import.section.daily_host_bytes, Some(ByteSize(5_120_000_000)));
    let young = Import::of_reports(&[smart(1)]).unwrap();
    assert_eq!(young.section.rated_tbw, None, "1 % is too coarse to imply a rating");
    assert!(young.read[0].starts_with("wear: percentage_used = 1"), "{:?}", young.read);
}

fn sample(kind: ReportKind, file: &str) -> Report {
    let path = format!("{}/../../tests/data/nvme/{file}", env!("CARGO_MANIFEST_DIR"));
    Report::read(kind, &path).unwrap()
}

/// The real drives' reports of tests/data/nvme (sources in its README.md).
#[test]
fn real_drives_reports_map_to_their_keys() {
    let wdc = Import::of_reports(&[sample(ReportKind::IdCtrl, "wdc-sn730-id-ctrl.json")]).unwrap();
    assert_eq!(wdc.model, "WDC PC SN730 SDBQNTY-256G-1001");
    assert_eq!(wdc.section.logical_bytes, Some(ByteSize(256_060_514_304)), "tnvmcap");
    assert_eq!(wdc.section.max_transfer_bytes, Some(ByteSize(512 << 10)), "mdts 7");
    assert!(wdc.read.iter().any(|l| l.starts_with("oncs = 0x5f: Dataset Management (deallocate) supported")));
    let path = format!("{}/../../tests/data/nvme/wdc-sn730-id-ctrl.json", env!("CARGO_MANIFEST_DIR"));
    let device = DeviceSection { r#from: Some(path), ..Default::default() };
    let config =
        trimlab_device::SsdConfig::resolve(&device, &Default::default(), &Default::default()).unwrap();
    assert!(
        config.source_note.contains("2 mapped (logical_bytes, max_transfer_bytes)"),
        "{}",
        config.source_note
    );
    assert_eq!(
        (config.logical_bytes(), config.max_transfer_bytes, config.preset.as_str()),
        (256_060_514_304, 512 << 10, "nvme-tlc")
    );
    let samsung =
        Import::of_reports(&[sample(ReportKind::Smart, "samsung-970-evo-plus-250gb-smartctl.json")]).unwrap();
    assert_eq!(samsung.model, "Samsung SSD 970 EVO Plus 250GB");
    assert_eq!(samsung.section.logical_bytes, Some(ByteSize(250_059_350_016)));
    assert_eq!(samsung.section.rated_tbw, None, "percentage_used 0 implies no rating");
    // 1969459 units of 512000 B over 3149 h, that is 131 whole days.
    assert_eq!(samsung.section.daily_host_bytes, Some(ByteSize(1_969_459 * 512_000 / 131)));
    let ns = Import::of_reports(&[sample(ReportKind::IdNs, "nvme-cli-2173-7.68tb-id-ns.json")]).unwrap();
    assert_eq!(ns.section.logical_bytes, Some(ByteSize(0x37e3e92b0 * 512)));
    assert_eq!(ns.section.trim_granularity_bytes, Some(ByteSize(256 * 512)), "npdg 255, 0's based");
    assert!(ns
        .read
        .iter()
        .any(|l| l.starts_with("dlfeat = 9: a deallocated block reads zeroes; Write Zeroes may")));
}

#[test]
fn bad_reports_name_the_file_and_the_field() {
    let e = Report::parse(ReportKind::IdCtrl, "c.json", "{\"mdts\": 5,").err().unwrap().to_string();
    assert!(e.starts_with("config: device.from = \"c.json\" (not JSON"), "{e}");
    let e = Report::parse(ReportKind::IdCtrl, "ns.json", r#"{"nsze": 5}"#).err().unwrap().to_string();
    assert!(e.contains("give it as device.from_ns"), "{e}");
    let ctrl = parse(ReportKind::IdCtrl, r#"{"mdts":"seven"}"#);
    let e = Import::of_reports(&[ctrl]).err().unwrap().to_string();
    assert!(e.contains("\"t.json\"") && e.contains("field \"mdts\" = \"seven\""), "{e}");
    let ctrl = parse(ReportKind::IdCtrl, r#"{"mdts":40}"#);
    assert!(Import::of_reports(&[ctrl]).err().unwrap().to_string().contains("0..=18"));
    let ns = parse(ReportKind::IdNs, r#"{"nsze":8,"flbas":3,"lbafs":[{"ds":9}]}"#);
    let e = Import::of_reports(&[ns]).err().unwrap().to_string();
    assert!(e.contains("LBA format 3"), "{e}");
}
