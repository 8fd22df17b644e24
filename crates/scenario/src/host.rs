//! The `[host]` section (the file system and its TRIM policy) and the `[thin]` section (the
//! thin-provisioned volume `[device] kind = "thin"` selects), resolved into the model's
//! `FsConfig` and `ThinConfig`. Sizes and durations here need a unit ("64KiB", "5s").

use serde::{Deserialize, Deserializer, Serialize};
use trimlab_device::{ConfigError, ThinConfig};
use trimlab_fs::config::PolicyParams;
use trimlab_fs::{FsConfig, Kernel, Layout, PolicyKind};
use trimlab_sim::{ByteSize, DurationNs};

/// `[host] fs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    /// No file system: the workload talks to the block device.
    #[default]
    None,
    /// The ext4-like journaling file system of trimlab-fs.
    Ext4,
}

/// `[host]`. Unset keys take `FsConfig::default()`'s values (docs/config.md lists them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSection {
    pub fs: Option<FsKind>,
    /// The TRIM policy: `nodiscard`, `discard`, ..., `selective:LOW:HIGH`, `fstrim:PERIOD`.
    pub discard: Option<String>,
    /// mke2fs discards the whole device first (`-E discard`, mke2fs's default).
    pub mkfs_discard: Option<bool>,
    /// Which kernel's behaviours the model follows: "paper" (the default: the setup of the
    /// paper experiments) or "linux-6.18" (what the discard-pattern recordings showed: lazy
    /// inode-table init, locality-group chunks, data from group 1, btrfs' free-space merging
    /// and tick-rounded async delay; docs/host-fs.md).
    pub kernel: Option<Kernel>,
    /// The on-disk layout: "ext4" (the default: block groups of `blocks_per_group`), "btrfs"
    /// (mkfs.btrfs 6.2's block groups, data size classes and per-block-group FITRIM, with
    /// btrfs' 30 s commit and its async discard as Linux 6.18 does it) or "xfs" (256 MiB
    /// allocation groups, XFS's 30 s log worker and deferred inode inactivation), whatever
    /// `kernel` says; docs/host-fs.md.
    /// Left out of the serialized config when unset, so existing config hashes stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    #[serde(default, deserialize_with = "size")]
    pub block_bytes: Option<ByteSize>,
    pub blocks_per_group: Option<u64>,
    #[serde(default, deserialize_with = "size")]
    pub inode_ratio_bytes: Option<ByteSize>,
    /// "0B" = mke2fs's default for the file-system size.
    #[serde(default, deserialize_with = "size")]
    pub journal_bytes: Option<ByteSize>,
    #[serde(default, deserialize_with = "duration")]
    pub commit_interval: Option<DurationNs>,
    #[serde(default, deserialize_with = "size")]
    pub dirty_limit_bytes: Option<ByteSize>,
    pub lazy_workers_max: Option<usize>,
    pub lazy_trims_per_worker: Option<usize>,
    #[serde(default, deserialize_with = "duration")]
    pub async_delay: Option<DurationNs>,
    pub async_iops_limit: Option<u64>,
    #[serde(default, deserialize_with = "size")]
    pub async_max_bytes: Option<ByteSize>,
    #[serde(default, deserialize_with = "size")]
    pub fstrim_minlen_bytes: Option<ByteSize>,
}

/// A resolved `[host]`: the file system to make and how mkfs treats the device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostPlan {
    pub fs: FsConfig,
    pub mkfs_discard: bool,
}

/// `discard` text to the policy and, for `fstrim:PERIOD`, its period: a call into the fs
/// policy registry, where each policy parses its own arguments (`selective:LOW:HIGH`).
pub fn parse_discard(text: &str) -> Result<(PolicyKind, Option<u64>), String> {
    trimlab_fs::policy::parse(text).map(|p| (p.kind, p.period_ns))
}

impl HostSection {
    pub fn fs_kind(&self) -> FsKind {
        self.fs.unwrap_or_default()
    }

    /// The keys set in this section other than `fs`.
    fn set_keys(&self) -> Vec<String> {
        match toml::Value::try_from(self) {
            Ok(toml::Value::Table(t)) => t.keys().filter(|k| *k != "fs").cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// `None` for `fs = "none"` (then no other key may be set).
    pub fn resolve(&self) -> Result<Option<HostPlan>, ConfigError> {
        if self.fs_kind() == FsKind::None {
            return self.refuse_keys_without_fs().map(|()| None);
        }
        let mut fs = FsConfig::defaults_for(self.kernel.unwrap_or_default(), self.layout.unwrap_or_default());
        if let Some(text) = &self.discard {
            let (policy, period) =
                parse_discard(text).map_err(|e| ConfigError::new("host.discard", format!("{text:?}"), e))?;
            fs.policy = policy;
            if let Some(p) = period {
                fs.params.fstrim_period_ns = p;
            }
        }
        self.apply_layout_keys(&mut fs)?;
        self.apply_policy_keys(&mut fs.params)?;
        Ok(Some(HostPlan { fs, mkfs_discard: self.mkfs_discard.unwrap_or(false) }))
    }

    /// With `fs = "none"` there is no file system for any other key to configure.
    fn refuse_keys_without_fs(&self) -> Result<(), ConfigError> {
        let Some(key) = self.set_keys().into_iter().next() else { return Ok(()) };
        let value = toml::Value::try_from(self)
            .ok()
            .and_then(|v| v.get(&key).map(|x| x.to_string()))
            .unwrap_or_default();
        Err(ConfigError::new(
            &format!("host.{key}"),
            value,
            "needs host.fs = \"ext4\": with fs = \"none\" (the default) the workload talks to the \
             block device and there is no file system to apply it",
        ))
    }

    /// The keys of the file system's shape, laid over the kernel's and layout's defaults.
    fn apply_layout_keys(&self, fs: &mut FsConfig) -> Result<(), ConfigError> {
        if let Some(b) = self.block_bytes {
            if !b.0.is_power_of_two() || !(1024..=65536).contains(&b.0) {
                return Err(ConfigError::new(
                    "host.block_bytes",
                    b,
                    "must be a power of two from 1KiB to 64KiB",
                ));
            }
            fs.block_bytes = b.0;
        }
        if let Some(n) = self.blocks_per_group {
            if n == 0 || n % 64 != 0 {
                return Err(ConfigError::new(
                    "host.blocks_per_group",
                    n,
                    "must be a positive multiple of 64",
                ));
            }
            fs.blocks_per_group = n;
        }
        if let Some(b) = self.inode_ratio_bytes {
            fs.inode_ratio_bytes = positive("host.inode_ratio_bytes", b.0)?;
        }
        if let Some(b) = self.journal_bytes {
            if b.0 % fs.block_bytes != 0 {
                return Err(ConfigError::new(
                    "host.journal_bytes",
                    b,
                    "must be a multiple of host.block_bytes",
                ));
            }
            fs.journal_blocks = b.0 / fs.block_bytes;
        }
        if let Some(d) = self.commit_interval {
            fs.commit_interval_ns = positive("host.commit_interval", d.0)?;
        }
        if let Some(b) = self.dirty_limit_bytes {
            fs.dirty_limit_bytes = b.0;
        }
        Ok(())
    }

    /// The TRIM policies' knobs, laid over the kernel's and layout's defaults.
    fn apply_policy_keys(&self, p: &mut PolicyParams) -> Result<(), ConfigError> {
        if let Some(n) = self.lazy_workers_max {
            p.lazy_workers_max = positive("host.lazy_workers_max", n as u64)? as usize;
        }
        if let Some(n) = self.lazy_trims_per_worker {
            p.lazy_trims_per_worker = positive("host.lazy_trims_per_worker", n as u64)? as usize;
        }
        if let Some(d) = self.async_delay {
            p.async_delay_ns = d.0;
        }
        if let Some(n) = self.async_iops_limit {
            p.async_iops_limit = positive("host.async_iops_limit", n)?;
        }
        if let Some(b) = self.async_max_bytes {
            p.async_max_bytes = positive("host.async_max_bytes", b.0)?;
        }
        if let Some(b) = self.fstrim_minlen_bytes {
            p.fstrim_minlen_bytes = b.0;
        }
        Ok(())
    }
}

/// `value` when it is above zero, else the error naming `key`.
fn positive(key: &str, v: u64) -> Result<u64, ConfigError> {
    if v == 0 {
        Err(ConfigError::new(key, v, "must be > 0"))
    } else {
        Ok(v)
    }
}

/// `[thin]`: the thin-provisioned volume's costs. Unset keys take `ThinConfig::xtremio_like`'s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinSection {
    #[serde(default, deserialize_with = "size")]
    pub chunk_bytes: Option<ByteSize>,
    pub lanes: Option<usize>,
    #[serde(default, deserialize_with = "duration")]
    pub io_command: Option<DurationNs>,
    pub io_ps_per_byte: Option<u64>,
    #[serde(default, deserialize_with = "duration")]
    pub trim_command: Option<DurationNs>,
    pub trim_ps_per_byte: Option<u64>,
    pub unmap_ps_per_byte: Option<u64>,
    #[serde(default, deserialize_with = "size")]
    pub trim_max_bytes: Option<ByteSize>,
    /// The old spelling of `trim_max_bytes` (`[device]` spells it so): still read, with the
    /// note of [`ThinSection::deprecations`].
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub max_trim_bytes: Option<ByteSize>,
    #[serde(default, deserialize_with = "size")]
    pub max_transfer_bytes: Option<ByteSize>,
    #[serde(default, deserialize_with = "duration")]
    pub flush: Option<DurationNs>,
}

impl ThinSection {
    pub fn is_empty(&self) -> bool {
        *self == ThinSection::default()
    }

    /// The volume's costs, or the error when a key is set under both its spellings.
    pub fn resolve(&self, capacity_bytes: u64) -> Result<ThinConfig, ConfigError> {
        if let (Some(new), Some(old)) = (self.trim_max_bytes, self.max_trim_bytes) {
            return Err(ConfigError::new(
                "thin.max_trim_bytes",
                old.0,
                format!(
                    "is the old spelling of thin.trim_max_bytes (set to {}): set only trim_max_bytes",
                    new.0
                ),
            ));
        }
        let mut c = ThinConfig::xtremio_like(capacity_bytes);
        let set = |v: Option<u64>, to: &mut u64| {
            if let Some(v) = v {
                *to = v;
            }
        };
        set(self.chunk_bytes.map(|b| b.0), &mut c.chunk_bytes);
        set(self.io_command.map(|d| d.0), &mut c.io_command_ns);
        set(self.io_ps_per_byte, &mut c.io_ps_per_byte);
        set(self.trim_command.map(|d| d.0), &mut c.trim_command_ns);
        set(self.trim_ps_per_byte, &mut c.trim_ps_per_byte);
        set(self.unmap_ps_per_byte, &mut c.unmap_ps_per_byte);
        set(self.trim_max_bytes.or(self.max_trim_bytes).map(|b| b.0), &mut c.trim_max_bytes);
        set(self.max_transfer_bytes.map(|b| b.0), &mut c.max_transfer_bytes);
        set(self.flush.map(|d| d.0), &mut c.flush_ns);
        if let Some(n) = self.lanes {
            c.lanes = n;
        }
        Ok(c)
    }

    /// A note per key set under its deprecated spelling, for the user to update the config.
    pub fn deprecations(&self) -> Vec<String> {
        let old = self.max_trim_bytes.is_some();
        old.then(|| "deprecated: [thin] max_trim_bytes is now trim_max_bytes (as [device] spells it); the old spelling is still read".to_string())
            .into_iter()
            .collect()
    }
}

/// `text` parsed by `parse`, which must carry a unit: a bare number is refused so that "5" is
/// never silently five nanoseconds or five bytes.
pub fn with_unit<T>(text: &str, parse: fn(&str) -> Result<T, String>, example: &str) -> Result<T, String> {
    let t = text.trim();
    if !t.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(format!("\"{text}\" needs a unit: {example}"));
    }
    parse(t)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Int(i64),
    Float(f64),
    Text(String),
}

fn unit_value<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: fn(&str) -> Result<T, String>,
    example: &str,
) -> Result<Option<T>, D::Error> {
    let text =
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(format!("expected {example}")))? {
            Raw::Int(n) => n.to_string(),
            Raw::Float(x) => x.to_string(),
            Raw::Text(t) => t,
        };
    with_unit(&text, parse, example).map(Some).map_err(serde::de::Error::custom)
}

pub(crate) fn size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ByteSize>, D::Error> {
    unit_value(d, ByteSize::parse, "a byte size with its unit, like \"64KiB\", \"4MiB\", \"0B\"")
}

pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DurationNs>, D::Error> {
    unit_value(d, DurationNs::parse, "a duration with its unit, like \"100ms\", \"5s\", \"200us\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discard_names_parse_with_fstrim_period() {
        assert_eq!(parse_discard("lazy").unwrap(), (PolicyKind::Lazy, None));
        assert_eq!(parse_discard("fstrim:2s").unwrap(), (PolicyKind::Fstrim, Some(2_000_000_000)));
        let e = parse_discard("fstrim:2").unwrap_err();
        assert!(e.contains("needs a unit"), "{e}");
        let e = parse_discard("sometimes").unwrap_err();
        assert!(e.contains("lazy-reuse") && e.contains("fstrim:PERIOD"), "{e}");
    }

    #[test]
    fn defaults_are_the_fs_defaults() {
        let h = HostSection { fs: Some(FsKind::Ext4), ..Default::default() };
        let plan = h.resolve().unwrap().unwrap();
        assert_eq!(plan.fs, FsConfig::default());
        assert!(!plan.mkfs_discard);
    }

    /// `[host]` as a config file would give it.
    fn host(text: &str) -> Result<HostSection, String> {
        crate::RunConfig::parse(&format!("[host]\nfs = \"ext4\"\n{text}"), "test.toml")
            .map(|c| c.host)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn kernel_selects_the_recorded_behaviours_and_names_bad_values() {
        let h = host("kernel = \"linux-6.18\"\n").unwrap();
        assert_eq!(h.kernel, Some(Kernel::Linux6_18));
        let fs = h.resolve().unwrap().unwrap().fs;
        assert!(fs.lazy_itable_init && fs.first_data_group == 1 && fs.small_file_chunk_blocks == 512);
        assert!(fs.params.async_merge_free && fs.params.async_tick_ns == 4_000_000);
        let e = host("kernel = \"4.4\"\n").unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("kernel") && e.contains("4.4") && e.contains("linux-6.18"),
            "{e}"
        );
    }

    #[test]
    fn layout_selects_btrfs_or_xfs_and_stays_out_of_the_config_hash_when_unset() {
        for kernel in [None, Some(Kernel::Linux6_18)] {
            let h = HostSection {
                fs: Some(FsKind::Ext4),
                layout: Some(Layout::Btrfs),
                kernel,
                ..Default::default()
            };
            let fs = h.resolve().unwrap().unwrap().fs;
            assert!(fs.btrfs_layout && fs.commit_interval_ns == 30_000_000_000 && fs.params.async_merge_free);
            assert!(!fs.mke2fs_layout, "mke2fs' journal has no place in btrfs' layout");
        }
        // A key set after the layout still wins.
        let h = host("layout = \"btrfs\"\ncommit_interval = \"5s\"\n").unwrap();
        assert_eq!(h.resolve().unwrap().unwrap().fs.commit_interval_ns, 5_000_000_000);
        let h = host("layout = \"xfs\"\n").unwrap();
        let fs = h.resolve().unwrap().unwrap().fs;
        assert!(fs.inodegc.is_some() && fs.blocks_per_group == 65536 && !fs.btrfs_layout);
        let e = host("layout = \"zfs\"\n").unwrap_err();
        assert!(e.contains("layout") && e.contains("zfs") && e.contains("btrfs") && e.contains("xfs"), "{e}");
        let plain = HostSection { fs: Some(FsKind::Ext4), ..Default::default() };
        assert!(!serde_json::to_string(&plain).unwrap().contains("layout"));
        assert!(!plain.resolve().unwrap().unwrap().fs.btrfs_layout);
    }

    #[test]
    fn thin_reads_the_old_trim_max_spelling_with_a_note_and_refuses_both() {
        let thin =
            |text: &str| crate::RunConfig::parse(&format!("[thin]\n{text}"), "test.toml").unwrap().thin;
        let new = thin("trim_max_bytes = \"1MiB\"\n");
        assert_eq!(new.resolve(1 << 30).unwrap().trim_max_bytes, 1 << 20);
        assert!(new.deprecations().is_empty());
        let old = thin("max_trim_bytes = \"1MiB\"\n");
        assert_eq!(old.resolve(1 << 30).unwrap().trim_max_bytes, 1 << 20);
        assert!(old.deprecations()[0].contains("trim_max_bytes"), "{:?}", old.deprecations());
        let both = thin("trim_max_bytes = \"1MiB\"\nmax_trim_bytes = \"2MiB\"\n");
        let e = both.resolve(1 << 30).unwrap_err().to_string();
        assert!(e.contains("thin.max_trim_bytes") && e.contains("set only trim_max_bytes"), "{e}");
    }
}
