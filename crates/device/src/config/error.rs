//! `ConfigError`: a configuration value that cannot be used, naming the key, the value and
//! what the key accepts.

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config: {key} = {value} ({accepted})")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub accepted: String,
}

impl ConfigError {
    pub fn new(key: &str, value: impl ToString, accepted: impl ToString) -> Self {
        ConfigError { key: key.to_string(), value: value.to_string(), accepted: accepted.to_string() }
    }
}
