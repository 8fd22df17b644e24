//! A device described by the drive's own reports: nvme-cli's `id-ctrl`, `nvm-id-ctrl` and
//! `id-ns` JSON and smartctl's `-a -j` JSON, mapped field by field to `[device]` keys (each
//! mapping cites the NVMe field it reads), laid under the user's keys and over the closest
//! preset's; what no report gives stays the preset's and is listed as assumed
//! (docs/config.md, "A device from the drive").

use super::device::DeviceSection;
use super::error::ConfigError;
use serde_json::{Map, Value};
use trimlab_sim::ByteSize;

/// CAP.MPSMIN, the unit of MDTS, is a controller register that `id-ctrl` does not show.
/// Assumption: 4 KiB (MPSMIN = 0), what PCIe NVMe drives report.
pub const MPSMIN_BYTES: u64 = 4096;
/// A SMART "data unit" is 1000 units of 512 bytes (NVMe Base Specification 2.0, SMART / Health
/// Information log page 02h, Data Units Read / Written).
pub const DATA_UNIT_BYTES: u64 = 512_000;
/// Percentage Used is an integer: below this the rating it implies is off by more than 5 %
/// (rounding of one point), so it is reported, not mapped. Assumption: the 5 % bound.
pub const WEAR_PERCENT_MIN: u64 = 10;
/// Dataset Management's NR field is 8 bits, 0's based: at most 256 ranges a command (NVMe NVM
/// Command Set Specification 1.0, Dataset Management command, Command Dword 10).
pub const DSM_RANGES_MAX: u64 = 256;

const CITE_NSZE: &str = "NVM Command Set Spec 1.0, Identify Namespace (CNS 00h): bytes 7:0 NSZE, byte 26 FLBAS, LBA Format n at bytes 128+4n (LBADS, bits 23:16, 2^n bytes)";
const CITE_SMART_SIZE: &str =
    "smartctl JSON nvme_namespaces[0].size.bytes (else user_capacity.bytes): NSZE x the LBA size";
const CITE_TNVMCAP: &str = "NVMe Base Spec 2.0, Identify Controller (CNS 01h): bytes 295:280 TNVMCAP";
const CITE_MDTS: &str = "NVMe Base Spec 2.0, Identify Controller: byte 77 MDTS, 2^MDTS units of CAP.MPSMIN (4 KiB assumed), 0 = no limit";
const CITE_MAXCMD: &str =
    "NVMe Base Spec 2.0, Identify Controller: bytes 515:514 MAXCMD, commands processed at one time";
const CITE_DMRL: &str = "NVM Command Set Spec 1.0, I/O Command Set specific Identify Controller (CNS 06h, CSI 00h): byte 3 DMRL, ranges per Dataset Management command, 0 = no limit";
const CITE_DMSL: &str = "NVM Command Set Spec 1.0, I/O Command Set specific Identify Controller: bytes 15:8 DMSL (logical blocks per command), else bytes 7:4 DMRSL (per range) x the ranges";
const CITE_NPDG: &str = "NVM Command Set Spec 1.0, Identify Namespace: byte 24 NSFEAT bit 4 (OPTPERF: NPDG/NPDA valid), bytes 69:68 NPDG, 0's based, in logical blocks";
const CITE_WEAR: &str = "NVMe Base Spec 2.0, SMART / Health Information log (02h): byte 5 Percentage Used, bytes 63:48 Data Units Written (1000 x 512 B); smartctl JSON nvme_smart_health_information_log.percentage_used, .data_units_written";
const CITE_DAILY: &str = "NVMe Base Spec 2.0, SMART / Health Information log: bytes 63:48 Data Units Written over bytes 143:128 Power On Hours; smartctl JSON .data_units_written, .power_on_hours";

/// Which report a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportKind {
    IdCtrl,
    NvmIdCtrl,
    IdNs,
    Smart,
}

impl ReportKind {
    pub const ALL: [ReportKind; 4] =
        [ReportKind::IdCtrl, ReportKind::NvmIdCtrl, ReportKind::IdNs, ReportKind::Smart];

    /// The `[device]` key that names a file of this kind.
    pub fn key(self) -> &'static str {
        match self {
            ReportKind::IdCtrl => "device.from",
            ReportKind::NvmIdCtrl => "device.from_nvm",
            ReportKind::IdNs => "device.from_ns",
            ReportKind::Smart => "device.from_smart",
        }
    }

    /// The command that writes it.
    pub fn command(self) -> &'static str {
        match self {
            ReportKind::IdCtrl => "nvme id-ctrl DEV -o json",
            ReportKind::NvmIdCtrl => "nvme nvm-id-ctrl DEV -o json",
            ReportKind::IdNs => "nvme id-ns DEV -o json",
            ReportKind::Smart => "smartctl -a -j DEV",
        }
    }

    /// A field only this kind of report has: a file given as another kind is named as such.
    fn marker(self) -> &'static str {
        match self {
            ReportKind::IdCtrl => "mdts",
            ReportKind::NvmIdCtrl => "dmrl",
            ReportKind::IdNs => "nsze",
            ReportKind::Smart => "smartctl",
        }
    }

    fn of(section: &DeviceSection, kind: ReportKind) -> Option<&String> {
        match kind {
            ReportKind::IdCtrl => section.r#from.as_ref(),
            ReportKind::NvmIdCtrl => section.from_nvm.as_ref(),
            ReportKind::IdNs => section.from_ns.as_ref(),
            ReportKind::Smart => section.from_smart.as_ref(),
        }
    }
}

/// One report: its file (as named), kind and JSON object.
pub struct Report {
    pub kind: ReportKind,
    pub name: String,
    json: Map<String, Value>,
}

impl Report {
    /// `text` as a report of `kind`; the error names the file and what is wrong.
    pub fn parse(kind: ReportKind, name: &str, text: &str) -> Result<Report, ConfigError> {
        let refuse = |why: String| ConfigError::new(kind.key(), format!("\"{name}\""), why);
        let value: Value = serde_json::from_str(text)
            .map_err(|e| refuse(format!("not JSON ({e}); expected the output of `{}`", kind.command())))?;
        let Value::Object(json) = value else {
            return Err(refuse(format!("not a JSON object; expected the output of `{}`", kind.command())));
        };
        if !json.contains_key(kind.marker()) {
            let other = ReportKind::ALL.into_iter().find(|k| json.contains_key(k.marker()));
            let hint = match other {
                Some(k) => format!(" (it looks like `{}` output: give it as {})", k.command(), k.key()),
                None => String::new(),
            };
            return Err(refuse(format!(
                "has no field \"{}\"; expected the output of `{}`{hint}",
                kind.marker(),
                kind.command()
            )));
        }
        Ok(Report { kind, name: name.to_string(), json })
    }

    /// The file at `path`, read and parsed.
    pub fn read(kind: ReportKind, path: &str) -> Result<Report, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new(kind.key(), format!("\"{path}\""), format!("cannot read it: {e}"))
        })?;
        Report::parse(kind, path, &text)
    }

    fn at(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut value = self.json.get(*first)?;
        for step in rest {
            value = match step.parse::<usize>() {
                Ok(i) => value.get(i)?,
                Err(_) => value.get(*step)?,
            };
        }
        Some(value)
    }

    /// A non-negative integer at `path` (nvme-cli writes 128-bit fields as decimal strings);
    /// `None` when absent. The error names the file and the field.
    fn uint(&self, path: &[&str]) -> Result<Option<u64>, ConfigError> {
        let Some(value) = self.at(path) else { return Ok(None) };
        let parsed = match value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        parsed.map(Some).ok_or_else(|| {
            ConfigError::new(
                self.kind.key(),
                format!("\"{}\"", self.name),
                format!(
                    "field \"{}\" = {value}: expected a non-negative integer, as `{}` writes it",
                    path.join("."),
                    self.kind.command()
                ),
            )
        })
    }

    fn text(&self, path: &[&str]) -> Option<String> {
        self.at(path).and_then(Value::as_str).map(|s| s.trim().to_string())
    }

    fn bad(&self, field: &str, value: u64, accepted: &str) -> ConfigError {
        ConfigError::new(
            self.kind.key(),
            format!("\"{}\"", self.name),
            format!("field \"{field}\" = {value}: {accepted}"),
        )
    }
}

/// One `[device]` key a report gave.
#[derive(Clone, Debug)]
pub struct Mapped {
    pub key: &'static str,
    pub value: String,
    /// The fields it came from, with their values and the file.
    pub from: String,
    pub cite: &'static str,
}

/// What the reports give: their keys, how each was mapped, and what was read but maps to no
/// key.
#[derive(Clone, Debug, Default)]
pub struct Import {
    pub section: DeviceSection,
    pub mapped: Vec<Mapped>,
    /// Facts read that no key takes (the LBA size, DLFEAT, the wear counters), as lines.
    pub read: Vec<String>,
    pub model: String,
    /// The preset the rest comes from unless the user names one.
    pub preset: &'static str,
    pub files: Vec<String>,
}

/// The reports a section names, read; `None` when it names none.
pub fn reports_of(section: &DeviceSection) -> Result<Option<Vec<Report>>, ConfigError> {
    let mut reports = Vec::new();
    for kind in ReportKind::ALL {
        if let Some(path) = ReportKind::of(section, kind) {
            reports.push(Report::read(kind, path)?);
        }
    }
    Ok((!reports.is_empty()).then_some(reports))
}

impl Import {
    /// The import of the reports `section` names (`None`: it names none).
    pub fn of_section(section: &DeviceSection) -> Result<Option<Import>, ConfigError> {
        reports_of(section)?.map(|r| Import::of_reports(&r)).transpose()
    }

    /// The keys `reports` give, mapped one by one.
    pub fn of_reports(reports: &[Report]) -> Result<Import, ConfigError> {
        let find = |kind| reports.iter().find(|r| r.kind == kind);
        let (ctrl, nvm, ns, smart) = (
            find(ReportKind::IdCtrl),
            find(ReportKind::NvmIdCtrl),
            find(ReportKind::IdNs),
            find(ReportKind::Smart),
        );
        let model = ctrl
            .and_then(|c| c.text(&["mn"]))
            .or_else(|| smart.and_then(|s| s.text(&["model_name"])))
            .unwrap_or_else(|| "an unnamed drive".to_string());
        let sata =
            ctrl.is_none() && smart.and_then(|s| s.text(&["device", "protocol"])).as_deref() == Some("ATA");
        let mut import = Import {
            model,
            preset: if sata { "sata-mlc-2011" } else { super::preset::DEFAULT_PRESET },
            files: reports.iter().map(|r| r.name.clone()).collect(),
            ..Default::default()
        };
        let lba = lba_bytes(ns, smart, &mut import.read)?;
        import.capacity(ns, smart, ctrl, lba)?;
        if let Some(ctrl) = ctrl {
            import.controller(ctrl)?;
        }
        if let Some(nvm) = nvm {
            import.dataset_management(nvm, lba.unwrap_or(512))?;
        }
        if let Some(ns) = ns {
            import.deallocate(ns, lba.unwrap_or(512))?;
        }
        if let Some(smart) = smart {
            import.wear(smart)?;
        }
        Ok(import)
    }

    fn map(&mut self, key: &'static str, value: String, from: String, cite: &'static str) {
        self.mapped.push(Mapped { key, value, from, cite });
    }

    /// `logical_bytes`: the namespace's size, else smartctl's, else the controller's total.
    fn capacity(
        &mut self,
        ns: Option<&Report>,
        smart: Option<&Report>,
        ctrl: Option<&Report>,
        lba: Option<u64>,
    ) -> Result<(), ConfigError> {
        let from_ns = match (ns, lba) {
            (Some(ns), Some(lba)) => ns.uint(&["nsze"])?.map(|n| {
                (n.saturating_mul(lba), format!("{}: nsze = {n} x {lba}-byte LBAs", ns.name), CITE_NSZE)
            }),
            _ => None,
        };
        let from_smart = || -> Result<_, ConfigError> {
            let Some(s) = smart else { return Ok(None) };
            let size = match s.uint(&["nvme_namespaces", "0", "size", "bytes"])? {
                Some(b) => Some((b, "nvme_namespaces[0].size.bytes")),
                None => s.uint(&["user_capacity", "bytes"])?.map(|b| (b, "user_capacity.bytes")),
            };
            Ok(size.map(|(b, f)| (b, format!("{}: {f} = {b}", s.name), CITE_SMART_SIZE)))
        };
        let from_ctrl = || -> Result<_, ConfigError> {
            let Some(c) = ctrl else { return Ok(None) };
            Ok(c.uint(&["tnvmcap"])?
                .filter(|&b| b > 0)
                .map(|b| (b, format!("{}: tnvmcap = {b}", c.name), CITE_TNVMCAP)))
        };
        let found = match from_ns {
            Some(f) => Some(f),
            None => match from_smart()? {
                Some(f) => Some(f),
                None => from_ctrl()?,
            },
        };
        let Some((bytes, from, cite)) = found else {
            self.read
                .push("capacity: no report gives it (nsze, smartctl's size or tnvmcap); the preset's".into());
            return Ok(());
        };
        // The model counts whole 4 KiB pages; a tail under one page is not addressed.
        let pages_bytes = bytes / 4096 * 4096;
        if pages_bytes == 0 {
            return Err(ConfigError::new(
                "device.logical_bytes",
                bytes,
                format!("from {from}: under one 4096-byte page"),
            ));
        }
        self.section.logical_bytes = Some(ByteSize(pages_bytes));
        self.map("logical_bytes", pages_bytes.to_string(), from, cite);
        Ok(())
    }

    /// MDTS and MAXCMD of Identify Controller; ONCS's Dataset Management bit is reported.
    fn controller(&mut self, ctrl: &Report) -> Result<(), ConfigError> {
        if let Some(mdts) = ctrl.uint(&["mdts"])? {
            if mdts > 18 {
                return Err(ctrl.bad(
                    "mdts",
                    mdts,
                    "expected 0..=18 (2^MDTS x 4 KiB is at most 1 GiB, trimlab's largest transfer)",
                ));
            }
            if mdts > 0 {
                let bytes = MPSMIN_BYTES << mdts;
                self.section.max_transfer_bytes = Some(ByteSize(bytes));
                self.map(
                    "max_transfer_bytes",
                    bytes.to_string(),
                    format!("{}: mdts = {mdts}", ctrl.name),
                    CITE_MDTS,
                );
            }
        }
        if let Some(maxcmd) = ctrl.uint(&["maxcmd"])?.filter(|&m| m > 0) {
            let depth = maxcmd.min(65_536) as u32;
            self.section.queue_depth = Some(depth);
            self.map(
                "queue_depth",
                depth.to_string(),
                format!("{}: maxcmd = {maxcmd}", ctrl.name),
                CITE_MAXCMD,
            );
        }
        if let Some(oncs) = ctrl.uint(&["oncs"])? {
            let dsm = oncs & (1 << 2) != 0;
            self.read.push(format!(
                "oncs = {oncs:#x}: Dataset Management (deallocate) {} (NVMe Base Spec 2.0, Identify Controller bytes 521:520 ONCS bit 2){}",
                if dsm { "supported" } else { "NOT supported" },
                if dsm { "" } else { "; the drive would refuse TRIM, which the model still accepts" }
            ));
        }
        Ok(())
    }

    /// DMRL, DMRSL and DMSL of the NVM Command Set's Identify Controller.
    fn dataset_management(&mut self, nvm: &Report, lba: u64) -> Result<(), ConfigError> {
        let dmrl = nvm.uint(&["dmrl"])?.filter(|&r| r > 0);
        if let Some(ranges) = dmrl {
            let ranges = ranges.min(DSM_RANGES_MAX);
            self.section.trim_max_ranges = Some(ranges as u32);
            self.map(
                "trim_max_ranges",
                ranges.to_string(),
                format!("{}: dmrl = {ranges}", nvm.name),
                CITE_DMRL,
            );
        }
        let dmsl = nvm.uint(&["dmsl"])?.filter(|&b| b > 0);
        let dmrsl = nvm.uint(&["dmrsl"])?.filter(|&b| b > 0);
        let limit = match (dmsl, dmrsl) {
            (Some(blocks), _) => Some((blocks, format!("{}: dmsl = {blocks} blocks of {lba} B", nvm.name))),
            (None, Some(per_range)) => {
                let ranges = dmrl.unwrap_or(DSM_RANGES_MAX).min(DSM_RANGES_MAX);
                Some((
                    per_range.saturating_mul(ranges),
                    format!("{}: dmrsl = {per_range} blocks of {lba} B x {ranges} ranges", nvm.name),
                ))
            }
            (None, None) => None,
        };
        if let Some((blocks, from)) = limit {
            let bytes = blocks.saturating_mul(lba);
            self.section.trim_max_bytes = Some(ByteSize(bytes));
            self.map("trim_max_bytes", bytes.to_string(), from, CITE_DMSL);
        }
        Ok(())
    }

    /// NPDG (when NSFEAT says it is valid) and DLFEAT of Identify Namespace.
    fn deallocate(&mut self, ns: &Report, lba: u64) -> Result<(), ConfigError> {
        if let Some(dlfeat) = ns.uint(&["dlfeat"])? {
            let reads = match dlfeat & 0b111 {
                0b001 => "zeroes",
                0b010 => "all ones (FFh)",
                _ => "not reported",
            };
            self.read.push(format!(
                "dlfeat = {dlfeat}: a deallocated block reads {reads}; Write Zeroes {} deallocate (NVM Command Set Spec 1.0, Identify Namespace byte 33); the model keeps no data, so this changes no result",
                if dlfeat & 0b1000 != 0 { "may" } else { "does not" }
            ));
        }
        let optperf = ns.uint(&["nsfeat"])?.is_some_and(|f| f & (1 << 4) != 0);
        let Some(npdg) = ns.uint(&["npdg"])?.filter(|_| optperf) else { return Ok(()) };
        // 0's based; the model trims whole 4 KiB pages, so a finer granularity rounds up to one.
        let bytes = (npdg + 1).saturating_mul(lba).div_ceil(4096) * 4096;
        let npda = ns.uint(&["npda"])?.map(|a| format!(", npda = {a}")).unwrap_or_default();
        self.section.trim_granularity_bytes = Some(ByteSize(bytes));
        self.map(
            "trim_granularity_bytes",
            bytes.to_string(),
            format!("{}: npdg = {npdg} (+1) x {lba}-byte LBAs{npda}", ns.name),
            CITE_NPDG,
        );
        Ok(())
    }

    /// The SMART wear counters: reported; the rating Percentage Used implies and the drive's
    /// daily writes mapped when they mean something.
    fn wear(&mut self, smart: &Report) -> Result<(), ConfigError> {
        let log = |f: &str| smart.uint(&["nvme_smart_health_information_log", f]);
        let (used, written, hours) =
            (log("percentage_used")?, log("data_units_written")?, log("power_on_hours")?);
        let written_bytes = written.map(|u| u.saturating_mul(DATA_UNIT_BYTES));
        let counters =
            [("percentage_used", used), ("data_units_written", written), ("power_on_hours", hours)];
        let shown: Vec<String> =
            counters.iter().filter_map(|(k, v)| v.map(|v| format!("{k} = {v}"))).collect();
        if !shown.is_empty() {
            self.read.push(format!(
                "wear: {}{} (the drive's history; the model starts from a fresh drive)",
                shown.join(", "),
                written_bytes.map(|b| format!(" ({:.2} TB written)", b as f64 / 1e12)).unwrap_or_default()
            ));
        }
        if let (Some(used), Some(bytes)) = (used.filter(|&u| u >= WEAR_PERCENT_MIN), written_bytes) {
            let rated = bytes / used * 100;
            let capacity = self.section.logical_bytes.map_or(0, |b| b.0);
            if capacity > 0 {
                self.section.rated_tbw = Some(ByteSize(rated));
                self.section.rated_capacity = Some(ByteSize(capacity));
                let from = format!(
                    "{}: data_units_written = {} over percentage_used = {used}",
                    smart.name,
                    written.unwrap_or(0)
                );
                self.map("rated_tbw", rated.to_string(), from.clone(), CITE_WEAR);
                self.map("rated_capacity", capacity.to_string(), from, CITE_WEAR);
            }
        }
        if let (Some(bytes), Some(hours)) = (written_bytes.filter(|&b| b > 0), hours.filter(|&h| h >= 24)) {
            let daily = bytes / (hours / 24);
            self.section.daily_host_bytes = Some(ByteSize(daily));
            let from = format!(
                "{}: data_units_written = {} over power_on_hours = {hours} / 24",
                smart.name,
                written.unwrap_or(0)
            );
            self.map("daily_host_bytes", daily.to_string(), from, CITE_DAILY);
        }
        Ok(())
    }

    /// `user` laid over the import (and the import's preset when the user names none).
    pub fn under(&self, user: &DeviceSection) -> DeviceSection {
        let mut merged = user.or(&self.section);
        merged.preset = merged.preset.or_else(|| Some(self.preset.to_string()));
        merged
    }

    /// One line for a run's notes: the drive, what was mapped and where the rest comes from.
    pub fn note(&self, user: &DeviceSection, preset: &str) -> String {
        let mapped: Vec<&str> =
            self.mapped.iter().map(|m| m.key).filter(|k| !user.set_keys().contains(k)).collect();
        format!(
            "device from {} ({}): {} mapped ({}); the other keys are preset {preset}'s, assumed (`trimlab presets --from` lists them)",
            self.model,
            self.files.join(", "),
            mapped.len(),
            mapped.join(", ")
        )
    }
}

/// The LBA size in use: the namespace's format (FLBAS into LBAF), else smartctl's.
fn lba_bytes(
    ns: Option<&Report>,
    smart: Option<&Report>,
    read: &mut Vec<String>,
) -> Result<Option<u64>, ConfigError> {
    if let Some(ns) = ns {
        let flbas = ns.uint(&["flbas"])?.unwrap_or(0);
        // FLBAS bits 3:0 are the format's low 4 bits, bits 6:5 its high 2 (NVMe 2.0).
        let index = (flbas & 0xf) | ((flbas >> 5) & 0x3) << 4;
        let ds = ns.uint(&["lbafs", &index.to_string(), "ds"])?;
        let Some(ds) = ds else {
            return Err(ns.bad(
                "flbas",
                flbas,
                &format!("names LBA format {index}, which \"lbafs\" does not list"),
            ));
        };
        if !(9..=16).contains(&ds) {
            return Err(ns.bad(
                &format!("lbafs.{index}.ds"),
                ds,
                "expected 9..=16 (LBA sizes of 512 B to 64 KiB)",
            ));
        }
        read.push(format!(
            "LBA format {index}: {} B logical blocks ({}: flbas = {flbas}, lbafs[{index}].ds = {ds})",
            1u64 << ds,
            ns.name
        ));
        return Ok(Some(1 << ds));
    }
    let Some(s) = smart else { return Ok(None) };
    let size = match s.uint(&["nvme_namespaces", "0", "formatted_lba_size"])? {
        Some(b) => Some(b),
        None => s.uint(&["logical_block_size"])?,
    };
    if let Some(b) = size {
        if !b.is_power_of_two() || !(512..=65_536).contains(&b) {
            return Err(s.bad("logical_block_size", b, "expected a power of two, 512..=65536"));
        }
        read.push(format!("LBA size: {b} B ({}: formatted_lba_size)", s.name));
    }
    Ok(size)
}
