//! The run configuration as written in TOML: the one schema `run`, `serve`, `replay`, `advise`,
//! sweeps and reproductions share. Only this crate knows it.

use crate::host::{HostPlan, HostSection, ThinSection};
use crate::phase::{Phase, PhaseKind, PhaseSection};
use crate::ScenarioError;
use serde::{Deserialize, Serialize};
use trimlab_device::{
    ConfigError, DeviceKind, DeviceSection, FtlSection, SsdConfig, ThinConfig, TrimSection,
};
use trimlab_workload::{WorkloadConfig, WorkloadKind};

/// A whole run configuration as written in a file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub seed: Option<u64>,
    /// The run's random streams fork from `SeedTree::new(seed).child(seed_path)` when set: a
    /// reproduction point names the path its experiment used, so its config replays it exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed_path: Option<String>,
    #[serde(default)]
    pub device: DeviceSection,
    #[serde(default)]
    pub ftl: FtlSection,
    #[serde(default)]
    pub trim: TrimSection,
    #[serde(default, skip_serializing_if = "ThinSection::is_empty")]
    pub thin: ThinSection,
    #[serde(default)]
    pub host: HostSection,
    #[serde(default)]
    pub workload: WorkloadConfig,
    /// `[[phase]]`: when present, the run is these phases in order instead of
    /// precondition + `[workload]`.
    #[serde(default, rename = "phase", skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseSection>,
    /// `[output]`: what a run writes besides metrics.json.
    #[serde(default, skip_serializing_if = "OutputSection::is_empty")]
    pub output: OutputSection,
}

/// `[output]`: what a run writes besides metrics.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Write timeseries.csv with one row per this much simulated time (fio's log_avg_msec).
    pub interval: Option<trimlab_sim::DurationNs>,
}

impl OutputSection {
    pub fn is_empty(&self) -> bool {
        self.interval.is_none()
    }

    /// The sampling interval: `flag` (`--log-interval`) wins over `[output] interval`; must be
    /// positive.
    pub fn interval_ns(&self, flag: Option<&str>) -> Result<Option<u64>, ScenarioError> {
        let (ns, from) = match flag {
            Some(text) => (
                trimlab_sim::DurationNs::parse(text)
                    .map_err(|e| ScenarioError::Parse(format!("--log-interval: {e}")))?
                    .0,
                "--log-interval",
            ),
            None => match self.interval {
                Some(d) => (d.0, "output.interval"),
                None => return Ok(None),
            },
        };
        if ns == 0 {
            return Err(ScenarioError::Parse(format!(
                "{from} = 0: the interval must be positive, e.g. \"100ms\""
            )));
        }
        Ok(Some(ns))
    }
}

/// The device sections resolved: the SSD (for `[device] kind = "thin"`: the default preset's,
/// unused but valid) and the thin volume when there is one.
pub struct ResolvedDevice {
    pub ssd: SsdConfig,
    pub thin: Option<ThinConfig>,
}

/// A configuration resolved against its device and checked: everything a run reads.
pub struct Resolved {
    /// `seed` as written (a run's `seed` argument overrides it; default 1).
    pub seed: Option<u64>,
    pub seed_path: Option<String>,
    /// The SSD (for `[device] kind = "thin"`: the default preset's, unused but valid).
    pub device: SsdConfig,
    pub workload: WorkloadConfig,
    /// Set for `[device] kind = "thin"`.
    pub thin: Option<ThinConfig>,
    /// Set for `[host] fs = "ext4"`.
    pub host: Option<HostPlan>,
    /// The run's phases, in order: the `[[phase]]` list (each `workload` phase with its merged
    /// workload), or the implicit ones a run without it is made of (`phases::implicit`).
    pub phases: Vec<Phase>,
    pub output: OutputSection,
    /// Keep each `workload` phase round's latency histograms in [`crate::RunResult`]'s
    /// `phase_latencies` (`run --fio` sets it for fio's per-group report; not a config key).
    pub phase_latencies: bool,
}

impl RunConfig {
    pub fn parse(text: &str, origin: &str) -> Result<RunConfig, ScenarioError> {
        let mut config: RunConfig = toml::from_str(text)
            .map_err(|e| ScenarioError::Parse(format!("{origin}: {}", e.to_string().trim_end())))?;
        config.refuse_unknown_workload_keys(text, origin)?;
        config.read_scripts(origin)?;
        Ok(config)
    }

    /// Refuses a `[workload]` key (of the section or of a phase's `workload`) that neither the
    /// generator nor any kind reads, naming its line in `text`. Whether the kind reads it is
    /// checked at resolution, when the phases have given each section its kind.
    fn refuse_unknown_workload_keys(&self, text: &str, origin: &str) -> Result<(), ScenarioError> {
        use crate::key_lines::{line_of, Step};
        // A run without [[phase]] gives the loop's round keys in [workload] (workload_rounds.rs).
        let top = self
            .workload
            .keys
            .names()
            .filter(|k| !(self.phases.is_empty() && crate::workload_rounds::KEYS.contains(k)));
        let mut tables = vec![(None, top.collect::<Vec<_>>())];
        for (i, phase) in self.phases.iter().enumerate() {
            if let Some(over) = &phase.workload {
                tables.push((Some(i), over.keys().map(String::as_str).collect()));
            }
        }
        for (phase, names) in tables {
            let Err((key, value, why)) = trimlab_workload::kind::unknown_anywhere(names) else { continue };
            let (at, path) = match phase {
                None => ("workload".to_string(), vec![Step::Key("workload"), Step::Key(&key)]),
                Some(i) => (
                    format!("phase[{i}].workload"),
                    vec![Step::Key("phase"), Step::Entry(i), Step::Key("workload"), Step::Key(&key)],
                ),
            };
            let line = line_of(text, &path).map(|n| format!(", line {n}")).unwrap_or_default();
            return Err(ScenarioError::Parse(format!("{origin}{line}: {at}.{key} = {value} ({why})")));
        }
        Ok(())
    }

    /// Reads every `script = "FILE"` (of `[workload]` and of `ops` phases) that has no
    /// `operations` yet into `operations`, FILE taken relative to the directory of `origin` (the
    /// config file). `operations` already there win: a config written back by `--emit-configs` carries the script's
    /// text and runs without the file.
    fn read_scripts(&mut self, origin: &str) -> Result<(), ScenarioError> {
        let base = std::path::Path::new(origin).parent().unwrap_or(std::path::Path::new(""));
        let read = |key: &str, file: &str| {
            let path = base.join(file);
            trimlab_workload::input::read_text(&path, &path.display().to_string())
                .map_err(|e| ScenarioError::Parse(format!("{origin}: {key} = {file:?}: {e}")))
        };
        let keys = &mut self.workload.keys;
        for key in ["script", "filebench"] {
            if let (Some(file), None) = (keys.text(key), keys.text("operations")) {
                let text = read(&format!("workload.{key}"), file)?;
                keys.set_text("operations", &text);
            }
        }
        // A trace is streamed at run time (it may be millions of lines): only its place is
        // resolved here, and that it can be opened checked.
        if let Some(file) = keys.text("strace") {
            let path = base.join(file);
            trimlab_workload::input::check_readable(&path).map_err(|e| {
                ScenarioError::Parse(format!(
                    "{origin}: workload.strace = {file:?}: cannot read {}: {e}",
                    path.display()
                ))
            })?;
        }
        self.workload.dir = Some(base.to_path_buf());
        // A drive's reports (`[device] from`, ...) are named relative to the config too.
        let d = &mut self.device;
        for file in [&mut d.r#from, &mut d.from_nvm, &mut d.from_ns, &mut d.from_smart].into_iter().flatten()
        {
            *file = base.join(&*file).display().to_string();
        }
        for (i, phase) in self.phases.iter_mut().enumerate() {
            if let (Some(file), None) = (&phase.script, &phase.operations) {
                phase.operations = Some(read(&format!("phase[{i}].script"), file)?);
            }
        }
        Ok(())
    }

    /// Parses `text` with `--set key.path=value` overrides applied first. Without overrides the
    /// errors name lines of `text`; with them, an error names the override it comes from when
    /// the key was set on the command line.
    pub fn parse_with(text: &str, origin: &str, set: &[String]) -> Result<RunConfig, ScenarioError> {
        if set.is_empty() {
            return RunConfig::parse(text, origin);
        }
        let mut doc: toml::Table = toml::from_str(text)
            .map_err(|e| ScenarioError::Parse(format!("{origin}: {}", e.to_string().trim_end())))?;
        for assignment in set {
            crate::overrides::apply_set(&mut doc, assignment)?;
        }
        let mut config = RunConfig::deserialize(toml::Value::Table(doc)).map_err(|e| {
            ScenarioError::Parse(format!(
                "{origin} with --set {}: {}",
                set.join(" --set "),
                e.to_string().trim_end()
            ))
        })?;
        config.refuse_unknown_workload_keys(text, origin)?;
        config.read_scripts(origin)?;
        Ok(config)
    }

    /// The config as TOML text that `parse` reads back to an equal config (`--emit-configs`).
    /// Keys at their defaults are left out of `[workload]`, and empty sections are dropped.
    pub fn to_toml(&self) -> Result<String, ScenarioError> {
        let fail =
            |e: &dyn std::fmt::Display| ScenarioError::Parse(format!("cannot write the config as TOML: {e}"));
        let mut doc = toml::Table::try_from(self).map_err(|e| fail(&e))?;
        let defaults = toml::Table::try_from(WorkloadConfig::default()).map_err(|e| fail(&e))?;
        if let Some(toml::Value::Table(w)) = doc.get_mut("workload") {
            w.retain(|k, v| defaults.get(k) != Some(v));
        }
        doc.retain(|_, v| !matches!(v, toml::Value::Table(t) if t.is_empty()));
        toml::to_string(&doc).map_err(|e| fail(&e))
    }

    /// Resolves and checks the whole config: [`RunConfig::resolve_device`], then
    /// [`RunConfig::resolve_on`] that device.
    pub fn resolve(&self) -> Result<Resolved, ConfigError> {
        self.resolve_on(self.resolve_device()?)
    }

    /// The device sections alone (`[device]`, `[ftl]`, `[trim]`, `[thin]`), for a caller that
    /// needs the drive before the rest of the config is complete (`run --fio` sizes its jobs
    /// by the capacity) and then hands it to [`RunConfig::resolve_on`]: each part is resolved once.
    pub fn resolve_device(&self) -> Result<ResolvedDevice, ConfigError> {
        let thin_device = self.device.kind == Some(DeviceKind::Thin);
        let ssd = if thin_device {
            check_thin_device(self)?;
            SsdConfig::resolve(&DeviceSection::default(), &FtlSection::default(), &TrimSection::default())?
        } else {
            if !self.thin.is_empty() {
                return Err(ConfigError::new(
                    "thin",
                    "a [thin] section",
                    "is read only with device.kind = \"thin\"",
                ));
            }
            SsdConfig::resolve(&self.device, &self.ftl, &self.trim)?
        };
        let thin = thin_device
            .then(|| self.thin.resolve(self.device.logical_bytes.map_or(ssd.logical_bytes(), |b| b.0)))
            .transpose()?;
        if let Some(t) = &thin {
            trimlab_device::ThinVolume::new(t.clone()).map_err(|e| ConfigError::new("thin", "", e))?;
        }
        Ok(ResolvedDevice { ssd, thin })
    }

    /// The rest of the config resolved and checked on `device` (from
    /// [`RunConfig::resolve_device`] of this config's device sections).
    pub fn resolve_on(&self, device: ResolvedDevice) -> Result<Resolved, ConfigError> {
        let ResolvedDevice { ssd: device, thin } = device;
        let thin_device = thin.is_some();
        let host = self.host.resolve()?;
        let on_fs = host.is_some();
        let stack = Stack { on_fs, thin: thin_device, device: &device };
        if thin_device && !on_fs {
            return Err(ConfigError::new(
                "device.kind",
                "\"thin\"",
                "needs host.fs = \"ext4\" (the block generator and its phases drive an SSD)",
            ));
        }
        let mut phases = Vec::new();
        for (i, phase) in self.phases.iter().enumerate() {
            phase.validate(i, on_fs)?;
            let merged = if phase.kind == PhaseKind::Workload {
                let w = merge_workload(&self.workload, phase.workload.as_ref(), i)?;
                Some(stack.check_workload(w, &format!("phase[{i}].workload"))?)
            } else {
                None
            };
            phases.push(Phase { section: phase.clone(), workload: merged, written: true });
        }
        let workload = if self.phases.is_empty() {
            let mut w = self.workload.clone();
            let rounds = crate::workload_rounds::take(&mut w)?;
            let w = stack.check_workload(w, "workload")?;
            phases.extend(crate::workload_rounds::phases(&w, on_fs, rounds)?);
            w
        } else {
            // The phases complete it: its kind may not be the one its keys are for yet (keys no
            // kind reads were refused when the config was read).
            self.workload.clone()
        };
        Ok(Resolved {
            seed: self.seed,
            seed_path: self.seed_path.clone(),
            device,
            workload,
            thin,
            host,
            phases,
            output: self.output.clone(),
            phase_latencies: false,
        })
    }
}

/// With `[device] kind = "thin"` only `logical_bytes` (the volume's size) is read of
/// `[device]`, and `[ftl]` / `[trim]` describe no thin volume.
fn check_thin_device(config: &RunConfig) -> Result<(), ConfigError> {
    let read = DeviceSection {
        kind: config.device.kind,
        logical_bytes: config.device.logical_bytes,
        ..Default::default()
    };
    if config.device != read {
        return Err(ConfigError::new(
            "device",
            "SSD keys",
            "with device.kind = \"thin\" [device] reads only kind and logical_bytes; the volume's costs are [thin] keys",
        ));
    }
    if config.ftl != FtlSection::default() || config.trim != TrimSection::default() {
        return Err(ConfigError::new(
            "ftl / trim",
            "set",
            "describe an SSD; device.kind = \"thin\" has neither",
        ));
    }
    if config.device.logical_bytes.is_none() {
        return Err(ConfigError::new(
            "device.logical_bytes",
            "missing",
            "device.kind = \"thin\" needs the volume's size, e.g. logical_bytes = \"40GiB\"",
        ));
    }
    Ok(())
}

/// `[phase.workload]` keys laid over `[workload]`, checked as one section.
fn merge_workload(
    base: &WorkloadConfig,
    over: Option<&toml::Table>,
    index: usize,
) -> Result<WorkloadConfig, ConfigError> {
    let Some(over) = over else { return Ok(base.clone()) };
    let key = format!("phase[{index}].workload");
    let mut table = match toml::Value::try_from(base) {
        Ok(toml::Value::Table(t)) => t,
        _ => return Err(ConfigError::new(&key, "", "the [workload] section cannot be merged")),
    };
    for (k, v) in over {
        table.insert(k.clone(), v.clone());
    }
    let mut merged = WorkloadConfig::deserialize(toml::Value::Table(table))
        .map_err(|e| ConfigError::new(&key, "", e.to_string().trim_end()))?;
    // The config's directory (not a key, so the merge above dropped it).
    merged.dir = base.dir.clone();
    Ok(merged)
}

/// What a workload must fit.
struct Stack<'a> {
    on_fs: bool,
    thin: bool,
    device: &'a SsdConfig,
}

impl Stack<'_> {
    /// The section checked, its kind's keys in their canonical form.
    fn check_workload(&self, mut w: WorkloadConfig, at: &str) -> Result<WorkloadConfig, ConfigError> {
        self.check_kind(&w, at)?;
        trimlab_workload::kind::check_keys(&mut w).map_err(|e| key_error(at, e))?;
        if !self.on_fs && !self.thin {
            let d = self.device;
            w.validate(d.logical_bytes(), d.geometry.page_bytes as u64, d.max_transfer_bytes)?;
        }
        Ok(w)
    }

    /// The workload's kind must fit the stack: file-level kinds need a file system, block
    /// kinds a bare device, and 004's kinds an SSD of their own.
    fn check_kind(&self, w: &WorkloadConfig, at: &str) -> Result<(), ConfigError> {
        let kind = format!("{:?}", w.kind.name());
        let key = format!("{at}.kind");
        if w.kind.is_cluster_host() {
            // 004's workloads bring their own cluster host and measure from their own start.
            if at != "workload" {
                return Err(ConfigError::new(
                    &key,
                    kind,
                    "runs only as the top-level [workload], not in a phase",
                ));
            }
            if self.thin {
                return Err(ConfigError::new(
                    &key,
                    kind,
                    "runs on an SSD (device.kind = \"ssd\"): it reports 004's FTL measures",
                ));
            }
        }
        if w.kind.is_file_level() && !self.on_fs {
            return Err(ConfigError::new(
                &key,
                kind,
                "is a file-level workload: it needs host.fs = \"ext4\" (with host.fs = \"none\" use kind = \"block\")",
            ));
        }
        if !w.kind.is_file_level() && self.on_fs {
            let file_kinds: Vec<&str> = WorkloadKind::NAMES
                .iter()
                .copied()
                .filter(|n| WorkloadKind::parse(n).is_ok_and(|k| k.is_file_level()))
                .collect();
            return Err(ConfigError::new(
                &key,
                kind,
                format!(
                    "drives the block device directly; with host.fs = \"ext4\" use a file-level kind: {}",
                    file_kinds.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// A kind's key at fault, named within the section at `at`.
fn key_error(at: &str, (key, value, why): trimlab_workload::kind::KeyError) -> ConfigError {
    ConfigError::new(&format!("{at}.{key}"), value, why)
}
