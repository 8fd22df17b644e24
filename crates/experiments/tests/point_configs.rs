//! The configs `--emit-configs` writes for the host experiments are valid run configs: each
//! resolves, and its TOML parses back to the same TOML.

use trimlab_experiments::{select, Options};
use trimlab_scenario::RunConfig;

#[test]
fn every_host_point_config_resolves_and_round_trips() {
    let o = Options::new(1, 1.0);
    let names = ["lazy-trim", "selective-trim", "discard-vs-fstrim"].map(String::from);
    for experiment in select(&names).unwrap() {
        let configs = experiment.configs.expect("a host experiment has configs");
        let points = configs(&o);
        assert!(!points.is_empty(), "{}", experiment.name);
        for (name, config) in points {
            let at = format!("{}/{name}", experiment.name);
            config.resolve().unwrap_or_else(|e| panic!("{at}: {e}"));
            let text = config.to_toml().unwrap();
            let back = RunConfig::parse(&text, &at).unwrap_or_else(|e| panic!("{at}: {e}\n{text}"));
            assert_eq!(back.to_toml().unwrap(), text, "{at} does not round-trip");
        }
    }
}
