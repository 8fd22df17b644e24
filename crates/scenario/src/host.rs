//! The `[host]` section (the file system and its TRIM policy) and the `[thin]` section (the
//! thin-provisioned volume `[device] kind = "thin"` selects), resolved into the model's
//! `FsConfig` and `ThinConfig`. Sizes and durations here need a unit ("64KiB", "5s").
//!
//! `[host]` declares only the file system's keys; every other key it takes is a TRIM policy's,
//! declared in that policy's file (`trimlab_fs::policy::keys()`) and read here by its unit. Any
//! registered policy's key may be set whichever policy `discard` selects (as before the keys
//! moved): each policy reads its own, so a script or phase that mounts with another policy
//! finds its keys set.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use trimlab_device::{ConfigError, ThinConfig};
use trimlab_fs::config::PolicyParams;
use trimlab_fs::policy::{self, ParsedPolicy, PolicyKey, Unit};
use trimlab_fs::{FsConfig, Kernel, Layout};
use trimlab_sim::{ByteSize, DurationNs};

/// `[host] fs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    /// No file system: the workload talks to the block device.
    #[default]
    None,
    /// The ext4-like journaling file system of trimlab-fs.
    Ext4,
}

/// `fs = "xfs"` and `"btrfs"` are layouts of the one file system model: the error says so.
impl<'de> Deserialize<'de> for FsKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FsKind, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "none" => Ok(FsKind::None),
            "ext4" => Ok(FsKind::Ext4),
            "xfs" | "btrfs" => Err(serde::de::Error::custom(format!(
                "fs = \"{text}\": trimlab has one file-system model with ext4's, XFS's and btrfs's layouts and discard paths; write fs = \"ext4\" and layout = \"{text}\" (docs/host-fs.md)"
            ))),
            _ => Err(serde::de::Error::custom(format!(
                "unknown fs {text:?}: accepted \"none\" (the block device alone) or \"ext4\" (the file-system model; XFS and btrfs are its layout = \"xfs\" / \"btrfs\")"
            ))),
        }
    }
}

/// `[host]`. Unset keys take `FsConfig::default()`'s values (docs/config.md lists them), and
/// a policy's unset keys their policy's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
// The derives become `HostSection::serialize`/`deserialize`, which the trait impls below wrap:
// reading sets the policies' keys aside (`SplitPolicyKeys`).
#[serde(remote = "Self", deny_unknown_fields)]
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
    /// Delayed allocation: blocks are allocated when the page cache writes data back (the
    /// default with `kernel = "linux-6.18"` and on XFS and btrfs); `false` is ext4's
    /// `-o nodelalloc` (allocation at write(), as `kernel = "paper"` does).
    pub delalloc: Option<bool>,
    /// The TRIM policies' keys set here (`lazy_workers_max = 8`), written back beside the
    /// file system's.
    #[serde(flatten, skip_deserializing)]
    pub policy_keys: PolicyParams,
}

impl Serialize for HostSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        HostSection::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for HostSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut keys = PolicyParams::default();
        let mut host = HostSection::deserialize(SplitPolicyKeys { inner: d, keys: &mut keys })?;
        host.policy_keys = keys;
        Ok(host)
    }
}

/// `[host]`'s table handed to the derived reader with the policies' keys taken out: each is
/// read where it stands (so a bad value is reported at its line, under its key) by its
/// policy's unit, and a key that is neither the file system's nor a policy's is refused with
/// both lists.
struct SplitPolicyKeys<'a, D> {
    inner: D,
    keys: &'a mut PolicyParams,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for SplitPolicyKeys<'_, D> {
    type Error = D::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(name, fields, SplitVisitor { visitor, fields, keys: self.keys })
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct SplitVisitor<'a, V> {
    visitor: V,
    /// `[host]`'s own keys (the derive's field list).
    fields: &'static [&'static str],
    keys: &'a mut PolicyParams,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SplitVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(SplitMap { map, fields: self.fields, keys: self.keys })
    }
}

struct SplitMap<'a, A> {
    map: A,
    fields: &'static [&'static str],
    keys: &'a mut PolicyParams,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SplitMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key_seed(HostKeyName(self.fields))? {
            match key {
                HostKey::Own(name) => {
                    return seed.deserialize(IntoDeserializer::<A::Error>::into_deserializer(name)).map(Some);
                }
                HostKey::Policy(key) => {
                    let value = self.map.next_value_seed(PolicyValue(key))?;
                    self.keys.set(key, value);
                }
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

enum HostKey {
    /// One of `[host]`'s own keys.
    Own(&'static str),
    Policy(&'static PolicyKey),
}

/// A `[host]` key's name: `[host]`'s own (these fields), a registered policy's, or an error
/// listing both.
struct HostKeyName(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for HostKeyName {
    type Value = HostKey;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<HostKey, D::Error> {
        let name = String::deserialize(d)?;
        if let Some(own) = self.0.iter().find(|f| **f == name) {
            return Ok(HostKey::Own(own));
        }
        match policy::host_key(&name) {
            Some(key) => Ok(HostKey::Policy(key)),
            None => Err(de::Error::custom(unknown_key(&name, self.0))),
        }
    }
}

/// `unknown field `x` (did you mean ...?), expected one of` `[host]`'s keys, then the
/// policies' with the policies that read each.
fn unknown_key(name: &str, own: &[&'static str]) -> String {
    let policy_keys: Vec<&PolicyKey> = policy::keys().into_iter().filter(|k| k.in_host).collect();
    let all: Vec<&str> = own.iter().copied().chain(policy_keys.iter().map(|k| k.name)).collect();
    // `did_you_mean` reads `_` as `-` (policy names); key names are compared the same way.
    let dashed: Vec<String> = all.iter().map(|k| k.replace('_', "-")).collect();
    let hint = trimlab_sim::names::did_you_mean(name, dashed.iter().map(String::as_str))
        .and_then(|d| dashed.iter().position(|x| x == d))
        .map(|i| format!(" (did you mean `{}`?)", all[i]))
        .unwrap_or_default();
    let quoted = |k: &str| format!("`{k}`");
    let own: Vec<String> = own.iter().map(|k| quoted(k)).collect();
    let theirs: Vec<String> =
        policy_keys.iter().map(|k| format!("`{}` ({})", k.name, policy::readers(k).join(", "))).collect();
    format!(
        "unknown field `{name}`{hint}, expected one of {}, or a TRIM policy's key: {}",
        own.join(", "),
        theirs.join(", ")
    )
}

/// A policy key's value, read by its unit as `[host]` reads its own (sizes and durations
/// with their unit).
struct PolicyValue(&'static PolicyKey);

impl<'de> DeserializeSeed<'de> for PolicyValue {
    type Value = u64;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        match self.0.unit {
            Unit::Count => u64::deserialize(d),
            Unit::Bytes => unit_value(d, ByteSize::parse, SIZE_EXAMPLE).map(|b| b.0),
            Unit::Duration => unit_value(d, DurationNs::parse, DURATION_EXAMPLE).map(|t| t.0),
            Unit::Flag => bool::deserialize(d).map(u64::from),
        }
    }
}

/// A resolved `[host]`: the file system to make and how mkfs treats the device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostPlan {
    pub fs: FsConfig,
    pub mkfs_discard: bool,
    /// `[host] delalloc` when set (`fs.delalloc` holds the value in effect; this puts the
    /// key in the config hash only where it is written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delalloc: Option<bool>,
}

/// `discard` text to the policy and the keys its text sets (`fstrim:PERIOD`): a call into
/// the fs policy registry, where each policy parses its own arguments (`selective:LOW:HIGH`).
pub fn parse_discard(text: &str) -> Result<ParsedPolicy, String> {
    policy::parse(text)
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
        let layout = self.layout.unwrap_or_default();
        if self.kernel == Some(Kernel::Paper) && layout != trimlab_fs::Layout::Ext4 {
            return Err(ConfigError::new(
                "host.kernel",
                "\"paper\"",
                "is ext4's setup of the papers; the XFS and btrfs layouts follow Linux 6.18 (their kernel recordings), so drop kernel or write \"linux-6.18\"",
            ));
        }
        let mut fs = FsConfig::defaults_for(self.kernel.unwrap_or_default(), layout);
        if let Some(text) = &self.discard {
            let parsed =
                parse_discard(text).map_err(|e| ConfigError::new("host.discard", format!("{text:?}"), e))?;
            fs.policy = parsed.kind;
            fs.params.overlay(&parsed.params);
        }
        self.apply_layout_keys(&mut fs)?;
        self.apply_policy_keys(&mut fs.params)?;
        Ok(Some(HostPlan { fs, mkfs_discard: self.mkfs_discard.unwrap_or(false), delalloc: self.delalloc }))
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
        if let Some(on) = self.delalloc {
            if !on && self.layout.unwrap_or_default() != Layout::Ext4 {
                return Err(ConfigError::new(
                    "host.delalloc",
                    on,
                    "false (nodelalloc) needs layout = \"ext4\": XFS and btrfs always delay allocation",
                ));
            }
            fs.delalloc = on;
        }
        Ok(())
    }

    /// The TRIM policies' keys, laid over the kernel's and layout's defaults, each checked
    /// against its declaration.
    fn apply_policy_keys(&self, p: &mut PolicyParams) -> Result<(), ConfigError> {
        for (key, value) in self.policy_keys.iter() {
            key.check(value).map_err(|e| ConfigError::new(&format!("host.{}", key.name), value, e))?;
        }
        p.overlay(&self.policy_keys);
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
) -> Result<T, D::Error> {
    let text =
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(format!("expected {example}")))? {
            Raw::Int(n) => n.to_string(),
            Raw::Float(x) => x.to_string(),
            Raw::Text(t) => t,
        };
    with_unit(&text, parse, example).map_err(serde::de::Error::custom)
}

const SIZE_EXAMPLE: &str = "a byte size with its unit, like \"64KiB\", \"4MiB\", \"0B\"";
const DURATION_EXAMPLE: &str = "a duration with its unit, like \"100ms\", \"5s\", \"200us\"";

pub(crate) fn size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ByteSize>, D::Error> {
    unit_value(d, ByteSize::parse, SIZE_EXAMPLE).map(Some)
}

pub(crate) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DurationNs>, D::Error> {
    unit_value(d, DurationNs::parse, DURATION_EXAMPLE).map(Some)
}
