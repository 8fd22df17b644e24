//! The configs `--emit-configs` writes are valid run configs: each parses back to the same
//! config and resolves.

use trimlab_experiments::{point_configs, Options};
use trimlab_scenario::RunConfig;

#[test]
fn every_emitted_host_point_parses_back_and_resolves() {
    let o = Options::new(1, 1.0);
    for name in ["waf", "lazy-trim", "selective-trim", "discard-vs-fstrim"] {
        let points =
            point_configs(name, &o).expect("a host experiment has configs").expect("configs serialize");
        assert!(!points.is_empty(), "{name}");
        for (file, text) in points {
            if let Ok(dir) = std::env::var("TRIMLAB_EMIT_DIR") {
                std::fs::write(format!("{dir}/{name}-{file}"), &text).unwrap();
            }
            let config =
                RunConfig::parse(&text, &file).unwrap_or_else(|e| panic!("{name}/{file}: {e}\n{text}"));
            config.resolve().unwrap_or_else(|e| panic!("{name}/{file}: {e}\n{text}"));
            assert_eq!(config.to_toml().unwrap(), text, "{name}/{file} does not round-trip");
        }
    }
    assert!(point_configs("no-such-experiment", &o).is_none());
}
