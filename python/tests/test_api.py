"""Round trips of the Python API against the simulator: run, presets, replay, reproduce, and
errors carrying trimlab's message."""

import threading

import pytest

import trimlab


def test_run_takes_a_dict_toml_text_or_a_path_and_is_deterministic(repo, small, tmp_path):
    from_text = trimlab.run(small, seed=3)
    assert from_text["seed"] == 3
    assert from_text["report"]["waf"] >= 1.0
    assert trimlab.run(small, seed=3) == from_text
    as_dict = {
        "device": {"preset": "nvme-tlc", "channels": 1, "chips_per_channel": 1, "dies_per_chip": 1,
                   "planes_per_die": 2, "logical_bytes": "16MiB", "pages_per_block": 32, "spare_factor": 0.2},
        "workload": {"trim_fraction": 0.1, "writes": "1x", "precondition": "fill"},
    }
    assert trimlab.run(as_dict, seed=3) == from_text
    path = repo / "examples" / "sweeps" / "base-64mib.toml"
    by_path = trimlab.run(path)
    assert by_path["report"]["logical_pages"] == 64 * 1024 * 1024 // 4096
    assert trimlab.run(str(path)) == by_path
    # TOML text only when marked as text; a str is a path, even one with "=" in it (issue 25).
    assert trimlab.run(config_text=small.text, seed=3) == from_text
    odd = tmp_path / "sf=0.1" / "x.toml"
    odd.parent.mkdir()
    odd.write_text(small.text)
    assert trimlab.run(str(odd), seed=3) == from_text
    with pytest.raises(trimlab.TrimlabError, match=r"a str is a path.*trimlab.Config\(text\)"):
        trimlab.run(small.text)
    with pytest.raises(TypeError, match="not both"):
        trimlab.run(small, config_text=small.text)


def test_set_overrides_change_the_run_like_the_cli(small):
    plain = trimlab.run(small)
    more_spare = trimlab.run(small, set=["device.spare_factor=0.4"])
    assert more_spare["report"]["spare_factor"] > plain["report"]["spare_factor"]
    assert more_spare["report"]["waf"] < plain["report"]["waf"]
    assert trimlab.run(small, set=["trim.engine=none"])["report"]["trim"]["engine"] == "none"


def test_bad_configs_raise_trimlab_error_with_the_message(small, tmp_path):
    with pytest.raises(trimlab.TrimlabError, match=r"unknown field `spare_factr`"):
        trimlab.run(trimlab.Config(small.text.replace("spare_factor", "spare_factr")))
    with pytest.raises(trimlab.TrimlabError, match=r"spare_factor = 1.5"):
        trimlab.run(small, set=["device.spare_factor=1.5"])
    with pytest.raises(trimlab.TrimlabError, match=r"cannot read .*nope.toml"):
        trimlab.run(tmp_path / "nope.toml")
    with pytest.raises(trimlab.TrimlabError, match=r"None is not a value"):
        trimlab.run({"device": {"spare_factor": None}})
    with pytest.raises(TypeError, match=r"a path \(str or os.PathLike\), a dict or trimlab.Config"):
        trimlab.run(3)
    assert issubclass(trimlab.TrimlabError, Exception)


def test_issue26_inputs_that_panicked_or_spun_raise_trimlab_error_or_end(small):
    # A cost of i64::MAX wrapped the simulated clock and raised PanicException (not an
    # Exception); now the config check refuses it, naming the key.
    with pytest.raises(trimlab.TrimlabError, match=r"device.firmware_ns = 9223372036854775807 \(must be at most"):
        trimlab.run(small, set=["device.firmware_ns=9223372036854775807"])
    # A trim-only workload spun forever in the steady precondition.
    metrics = trimlab.run(small, set=["workload.trim_fraction=1.0", "workload.ops=500", 'workload.precondition="steady"'])
    assert metrics["report"]["host"]["trim_commands"] == 500
    assert metrics["report"]["host"]["write_commands"] == 0


def test_the_gil_is_released_while_simulating(repo):
    # While a run is in a worker thread, this thread keeps executing Python. With the GIL held
    # for the whole run it could not take a single step until the run returned.
    config = repo / "examples" / "sweeps" / "base-64mib.toml"
    done = threading.Event()
    steps_during_run = 0

    def work():
        trimlab.run(config, set=["workload.writes=\"20x\""])
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        steps_during_run += 1
    worker.join()
    assert steps_during_run > 10_000


def test_presets_are_resolved():
    presets = {p["name"]: p for p in trimlab.presets()}
    assert {"nvme-tlc", "k9lag08u0m-4ch"} <= presets.keys()
    assert presets["k9lag08u0m-4ch"]["resolved"]["geometry"]["channels"] == 4


def test_replay_of_a_shipped_trace(repo):
    traces = repo / "examples" / "traces"
    online = trimlab.replay(traces / "ext4-smallfiles-discard.log", traces / "device.toml")
    assert online["replay"]["requests"] > 0
    assert online["report"]["trim"]["commands"] > 0
    dropped = trimlab.replay(traces / "ext4-smallfiles-discard.log", traces / "device.toml", trims="drop")
    assert dropped["report"]["trim"]["commands"] == 0
    with pytest.raises(trimlab.TrimlabError, match=r"accepted: as-recorded, drop, fstrim:PERIOD"):
        trimlab.replay(traces / "ext4-smallfiles-discard.log", traces / "device.toml", trims="sometimes")
    with pytest.raises(trimlab.TrimlabError, match=r"nope.log"):
        trimlab.replay(traces / "nope.log", traces / "device.toml")


def test_reproduce_gives_dataframes_and_verdicts():
    assert "waf" in trimlab.experiments()
    out = trimlab.reproduce("waf", scale=0.05)
    assert len(out["verdicts"]) > 0
    assert set(out["verdicts"].columns) == {"claim", "holds", "detail"}
    tables = [k for k in out if k not in ("verdicts", "params")]
    assert tables and all(len(out[k]) > 0 for k in tables)
    with pytest.raises(trimlab.TrimlabError, match=r"unknown experiment \"wafer\""):
        trimlab.reproduce("wafer")
    with pytest.raises(trimlab.TrimlabError, match=r"scale"):
        trimlab.reproduce("waf", scale=0)
