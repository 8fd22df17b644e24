"""trimlab.sweep: the table, failed rows, bad grids, resume, shards, and Ray == local."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import trimlab
from conftest import ray_required

GRID = {"device.spare_factor": [0.15, 0.3], "trim.engine": ["immediate", "none"]}


def test_one_row_per_run_in_the_documented_order(small):
    df = trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2)
    assert list(df.columns[:7]) == ["run", "device.spare_factor", "trim.engine", "seed", "config_hash", "status", "error"]
    assert len(df) == 8
    assert list(df["run"]) == list(range(8))
    assert list(df["seed"]) == [1, 2] * 4
    assert list(df["trim.engine"]) == ["immediate", "immediate", "none", "none"] * 2
    assert (df["status"] == "ok").all()
    assert df["report.waf"].dtype == float
    # A row equals the single run of its config and seed.
    alone = trimlab.run(small, seed=2, set=["device.spare_factor=0.3", 'trim.engine="none"'])
    assert df.loc[7, "report.waf"] == alone["report"]["waf"]
    # The worker count does not change the table.
    pd.testing.assert_frame_equal(df, trimlab.sweep(small, GRID, seeds=(1, 2), jobs=1))


def test_a_bad_value_fails_its_row_and_the_sweep_goes_on(small):
    with pytest.warns(trimlab.TrimlabWarning, match=r"2 of 3 points failed .*'error' column.*spare_factor"):
        df = trimlab.sweep(small, {"device.spare_factor": [0.2, "lots", 1.5]}, jobs=2)
    assert list(df["status"]) == ["ok", "failed", "failed"]
    assert "spare_factor" in df.loc[1, "error"]
    assert "1.5" in df.loc[2, "error"]
    assert pd.isna(df.loc[2, "report.waf"]) and df.loc[0, "report.waf"] > 1


def test_a_grid_too_large_raises_before_it_is_expanded(small):
    # 10^8 points asked for 8.8 GB at once and aborted the interpreter (issue 26).
    grid = {f"workload.k{i}": list(range(10)) for i in range(8)}
    with pytest.raises(trimlab.TrimlabError, match=r"more than the 1000000 a sweep may have"):
        trimlab.sweep(small, grid)
    with pytest.raises(trimlab.TrimlabError, match=r"more than the 1000000 a sweep may have"):
        trimlab.sweep(small, {f"workload.k{i:02}": [1, 2] for i in range(64)})


def test_bad_grids_raise_before_anything_runs(small):
    with pytest.raises(trimlab.TrimlabError, match=r"grid key `device.spare_factr`.*no point of the grid is a valid config"):
        trimlab.sweep(small, {"device.spare_factr": [0.1, 0.2]})
    with pytest.raises(trimlab.TrimlabError, match=r"`device.spare_factor` has an empty list of values"):
        trimlab.sweep(small, {"device.spare_factor": []})
    with pytest.raises(trimlab.TrimlabError, match=r"seeds is an empty list"):
        trimlab.sweep(small, GRID, seeds=())
    with pytest.raises(trimlab.TrimlabError, match=r"not a list of values"):
        trimlab.sweep(small, {"device.spare_factor": 0.1})
    with pytest.raises(TypeError, match="grid must be a dict"):
        trimlab.sweep(small, [("device.spare_factor", [0.1])])
    with pytest.raises(ValueError, match="backend='spark'"):
        trimlab.sweep(small, GRID, backend="spark")


def test_out_dir_resumes_without_redoing_rows_and_matches_the_cli_files(small, tmp_path):
    full = trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2, out=tmp_path / "a")
    journal = (tmp_path / "a" / "rows.jsonl").read_text().splitlines()
    assert len(journal) == 8
    # A kill after five rows, the sixth half written.
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "rows.jsonl").write_text("\n".join(journal[:5]) + "\n" + journal[5][:30])
    resumed = trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2, out=tmp_path / "b")
    pd.testing.assert_frame_equal(resumed, full)
    assert len((tmp_path / "b" / "rows.jsonl").read_text().splitlines()) == 8
    assert (tmp_path / "b" / "results.csv").read_bytes() == (tmp_path / "a" / "results.csv").read_bytes()
    from_csv = pd.read_csv(tmp_path / "a" / "results.csv")
    assert list(from_csv.columns) == list(full.columns)
    assert list(from_csv["report.waf"]) == list(full["report.waf"])
    split = json.loads((tmp_path / "a" / "results.json").read_text())
    assert split["columns"] == list(full.columns)


def test_shards_put_together_equal_the_whole_sweep(small):
    whole = trimlab.sweep(small, GRID, seeds=(1, 2, 3), jobs=2)
    parts = [trimlab.sweep(small, GRID, seeds=(1, 2, 3), jobs=2, shard=f"{k}/3") for k in (1, 2, 3)]
    assert sorted(len(p) for p in parts) == [4, 4, 4]
    merged = pd.concat(parts).sort_values("run").reset_index(drop=True)
    pd.testing.assert_frame_equal(merged, whole)
    with pytest.raises(trimlab.TrimlabError, match=r"--shard 4/3"):
        trimlab.sweep(small, GRID, shard="4/3")


def test_ray_missing_gives_a_clear_message(small):
    # A child interpreter where `import ray` fails, whether or not Ray is installed here.
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import trimlab\n"
        f"trimlab.sweep({small!r}, {{'device.spare_factor': [0.2]}}, backend='ray')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "needs Ray, which is not installed: pip install 'trimlab[ray]'" in result.stderr


@pytest.mark.filterwarnings("ignore::trimlab.TrimlabWarning")  # its grid fails points on purpose
def test_ray_and_local_give_identical_tables(small):
    if ray_required():
        import ray
    else:
        ray = pytest.importorskip("ray")
    grid = dict(GRID, **{"workload.trim_fraction": [0.0, 0.2]})
    grid["device.spare_factor"] = [0.15, "lots", 0.3]  # failed rows must match too
    local = trimlab.sweep(small, grid, seeds=(1, 2), jobs=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = trimlab.sweep(small, grid, seeds=(1, 2), backend="ray", chunk_size=5)
        single = trimlab.sweep(small, grid, seeds=(1, 2), backend="ray", chunk_size=1)
    finally:
        ray.shutdown()
    assert len(local) == 24 and (local["status"] == "failed").sum() == 8
    pd.testing.assert_frame_equal(on_ray, local)
    pd.testing.assert_frame_equal(single, local)


def test_numpy_arrays_and_ranges_are_value_lists(small):
    np = pytest.importorskip("numpy")
    df = trimlab.sweep(small, {"device.spare_factor": np.array([0.15, 0.3]), "workload.queue_depth": range(1, 3)})
    assert list(df["device.spare_factor"]) == [0.15, 0.15, 0.3, 0.3]
    assert list(df["workload.queue_depth"]) == [1, 2, 1, 2]


def test_progress_is_reported_per_point_and_a_raising_callback_is_raised_after(small, tmp_path):
    seen = []
    df = trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, len(df)) for k in range(1, len(df) + 1)]
    assert trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2, progress=False).equals(df)

    def stop(done, total):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2, out=tmp_path / "j", progress=stop)
    # The journal kept the rows, so the call resumes to the same table.
    assert trimlab.sweep(small, GRID, seeds=(1, 2), jobs=2, out=tmp_path / "j", progress=False).equals(df)
    with pytest.raises(TypeError, match="progress must be"):
        trimlab.sweep(small, GRID, progress="yes")
