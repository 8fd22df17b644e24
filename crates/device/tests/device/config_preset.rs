//! The preset files: complete, matching the documented models, unknown keys refused by name.

use trimlab_device::config::preset::*;
use trimlab_device::config::{DeviceSection, FtlSection, TrimCostModel, TrimSection};
use trimlab_nand::Timing;

#[test]
fn every_preset_file_is_complete() {
    for p in presets().unwrap() {
        let none = (DeviceSection::default(), FtlSection::default(), TrimSection::default());
        let layered = p.under(&none.0, &none.1, &none.2).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(layered.device.preset, None, "{}: a preset file does not name a preset", p.name);
        // Issue 39: every preset carries a rated endurance (its source is in its file).
        assert!(layered.device.rated_pe_cycles.is_some_and(|c| c > 0), "{}: rated_pe_cycles", p.name);
        assert!(!p.about.is_empty() && !p.trim_source.is_empty(), "{}: notes", p.name);
    }
}

/// The numbers in the data files are the ones the named models document (their sources are
/// in `Timing`'s and `TrimCostModel`'s constructors).
#[test]
fn preset_data_matches_the_documented_models() {
    let cases = [
        ("nvme-tlc", Timing::tlc_nvme(), TrimCostModel::nvme_fio()),
        ("sata-mlc-2011", Timing::mlc_sata_2011(), TrimCostModel::sata_2011()),
        ("ufs-2018", Timing::tlc_nvme(), TrimCostModel::ufs_2018()),
        ("k9lag08u0m-4ch", Timing::k9lag08u0m(), TrimCostModel::sata_2011()),
        // No named QLC model in trimlab-nand: the preset's own assumptions (its file).
        (
            "qlc-ssd",
            Timing {
                read_ns: 100_000,
                program_ns: 2_000_000,
                erase_ns: 10_000_000,
                transfer_ps_per_byte: 625,
                ..Timing::tlc_nvme()
            },
            TrimCostModel::nvme_fio(),
        ),
    ];
    assert_eq!(presets().unwrap().len(), cases.len());
    for (name, timing, cost) in cases {
        let p = Preset::named(name).unwrap();
        let d = &p.device;
        let data = (d.read_ns, d.program_ns, d.erase_ns, d.transfer_ps_per_byte, d.command_ns);
        let model = (
            timing.read_ns,
            timing.program_ns,
            timing.erase_ns,
            timing.transfer_ps_per_byte,
            timing.command_ns,
        );
        assert_eq!(
            data,
            (Some(model.0), Some(model.1), Some(model.2), Some(model.3), Some(model.4)),
            "{name}"
        );
        assert_eq!(p.trim.cost.clone().unwrap_or_default().complete(), Ok(cost), "{name}");
    }
    assert_eq!(DEFAULT_PRESET, FILES[0].0);
}

#[test]
fn a_preset_file_with_an_unknown_key_is_refused_by_name() {
    let e = parse("broken", "[device]\nchanels = 8\n").err().expect("refused");
    assert_eq!(e.key, "device.preset");
    assert!(e.accepted.contains("chanels") && e.accepted.contains("channels"), "{e}");
}
