"""The CLI and the Python module are adapters over the same job entries (crates/jobs): the same
config, trace or grid must give identical metrics through either. A divergence here is what
issue 24 found (Python's replay skipped the write-buffer drain the CLI did)."""

import json
import os
import pathlib
import subprocess

import pandas as pd
import pytest

import trimlab

REPO = pathlib.Path(__file__).resolve().parents[2]


def cli():
    """The release binary scripts/test-all builds (TRIMLAB_BIN names another)."""
    path = pathlib.Path(os.environ.get("TRIMLAB_BIN", REPO / "target" / "release" / "trimlab"))
    if not path.exists():
        pytest.fail(f"{path} is missing: build it with `cargo build --release` (scripts/test-all does)")
    return str(path)


def trimlab_cli(*args, cwd=REPO):
    result = subprocess.run([cli(), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result


def test_run_gives_the_same_metrics(tmp_path):
    config = REPO / "examples" / "quick.toml"
    trimlab_cli("run", config, "--seed", "3", "--out", tmp_path)
    from_cli = json.loads((tmp_path / "metrics.json").read_text())
    assert trimlab.run(config, seed=3) == from_cli


def buffered_trace(path):
    """4 KiB writes and some TRIMs that end without a FLUSH: on a drive with a write buffer the
    last writes are still in DRAM when the trace ends (fio iolog v3, times in us)."""
    lines = ["fio version 3 iolog"]
    for i in range(600):
        op = "trim" if i % 7 == 3 else "write"
        lines.append(f"{i * 20} f {op} {(i * 7919 % 4096) * 4096} 4096")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("trims", ["as-recorded", "drop", "fstrim:1ms"])
def test_replay_on_a_buffered_drive_gives_the_same_metrics(tmp_path, trims):
    # nvme-tlc keeps a 4 MiB write buffer: the pages left in it at the trace's end are
    # programmed before the totals, through either adapter (Python used to skip that).
    device = tmp_path / "nvme-tlc.toml"
    device.write_text('[device]\npreset = "nvme-tlc"\nlogical_bytes = "512MiB"\n')
    trace = buffered_trace(tmp_path / "buffered.log")
    trimlab_cli("replay", trace, "--device", device, "--trims", trims, "--out", tmp_path / "out")
    from_cli = json.loads((tmp_path / "out" / "metrics.json").read_text())
    from_python = trimlab.replay(str(trace), device, trims=trims)
    assert from_cli["buffered_pages_programmed_at_end"] > 0
    assert from_python == from_cli


def test_replay_of_a_shipped_trace_gives_the_same_metrics(tmp_path):
    trace = REPO / "examples" / "traces" / "ext4-smallfiles-discard.log"
    device = REPO / "examples" / "traces" / "device.toml"
    trimlab_cli("replay", trace, "--device", device, "--out", tmp_path / "out")
    from_cli = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert trimlab.replay(str(trace), device) == from_cli


def test_sweep_gives_the_same_table(tmp_path):
    base = REPO / "examples" / "sweeps" / "base-64mib.toml"
    axes = {"device.spare_factor": [0.15, 0.3], "trim.engine": ["immediate", "none"], "workload.writes": ["1x"]}
    grid = tmp_path / "grid.toml"
    lines = [f"base = {json.dumps(str(base))}", "seeds = [1, 2]", "[grid]"]
    lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in axes.items()]
    grid.write_text("\n".join(lines) + "\n")
    trimlab_cli("sweep", grid, "--out", tmp_path / "cli", "--jobs", "2")
    from_python = trimlab.sweep(base, axes, seeds=(1, 2), jobs=2, out=tmp_path / "python")
    cli_csv = (tmp_path / "cli" / "results.csv").read_text()
    assert (tmp_path / "python" / "results.csv").read_text() == cli_csv
    from_cli = pd.read_csv(tmp_path / "cli" / "results.csv")
    assert list(from_cli.columns) == list(from_python.columns)
    assert list(from_cli["report.waf"]) == list(from_python["report.waf"])
    assert len(from_cli) == 8 and set(from_cli["status"]) == {"ok"}


def test_advise_fio_gives_the_same_table(tmp_path):
    """`advise --fio` and `trimlab.advise(fio=...)` are one entry (crates/jobs advise_request):
    the same job on the same preset gives the same rows and recommendation."""
    job = REPO / "examples" / "fio" / "fill-then-trim.fio"
    sets = ["device.logical_bytes=256MiB"]
    trimlab_cli("advise", "--fio", job, "--device", "nvme-tlc", "--set", sets[0], "--out", tmp_path)
    from_cli = pd.read_csv(tmp_path / "advise" / "advise.csv")
    got = trimlab.advise(fio=job, device="nvme-tlc", set=sets)
    table = got["tables"]["advise"]
    assert list(table.columns) == list(from_cli.columns)
    assert table["scenario"].tolist() == from_cli["scenario"].tolist()
    assert table["trim_commands"].tolist() == from_cli["trim_commands"].tolist()
    assert got["recommendation"]
    assert any("its commands recorded" in n for n in got["notes"])


def test_advise_refuses_two_workloads_and_a_stray_root():
    job = REPO / "examples" / "fio" / "fill-then-trim.fio"
    with pytest.raises(TypeError, match="exactly one"):
        trimlab.advise(fio=job, filebench=job)
    with pytest.raises(TypeError, match="goes with strace"):
        trimlab.advise(fio=job, root="/tmp")
    with pytest.raises(TypeError, match="needs root"):
        trimlab.advise(strace=job)
