"""trimlab: a deterministic simulator of flash storage and TRIM, from Python.

    import trimlab
    m = trimlab.run("examples/quick.toml", seed=1)          # metrics.json as a dict
    df = trimlab.sweep("examples/sweeps/base-64mib.toml",
                       {"device.spare_factor": [0.07, 0.1, 0.2], "trim.engine": ["immediate", "none"]},
                       seeds=(1, 2, 3))                    # one row per run, as in results.csv

Configs are a dict, TOML text or a path. The simulator runs with the GIL released. Errors are
``trimlab.TrimlabError`` carrying trimlab's message. See docs/sweeps.md.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _trimlab
from ._trimlab import TrimlabError

__all__ = ["run", "replay", "presets", "reproduce", "experiments", "sweep", "TrimlabError"]
__version__ = _trimlab.__version__

Config = Union[Mapping[str, Any], str, "os.PathLike[str]"]


def _config_text(config: Config, what: str = "config") -> tuple[str, str]:
    """(TOML text, origin for messages) of a dict, TOML text or path."""
    if isinstance(config, Mapping):
        return _trimlab.toml_text(json.dumps(config)), f"<{what} dict>"
    if isinstance(config, os.PathLike) or (
        isinstance(config, str) and "\n" not in config and "=" not in config
    ):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            raise TrimlabError(f"{what}: cannot read {path}: {e.strerror}") from None
    if isinstance(config, str):
        return config, f"<{what} text>"
    raise TypeError(f"{what} must be a dict, TOML text or a path, not {type(config).__name__}")


def run(config: Config, seed: Optional[int] = 1, set: Optional[Sequence[str]] = None) -> dict:
    """Runs one configuration; returns the content of metrics.json.

    ``set`` takes ``--set``-style overrides: ``["device.spare_factor=0.1", "trim.engine=none"]``.
    ``seed=None`` uses the config's ``seed`` (else 1), as ``trimlab run`` does.
    """
    text, origin = _config_text(config)
    return json.loads(_trimlab.run(text, origin, seed, list(set or [])))


def presets() -> list:
    """Every device preset with its resolved parameters."""
    return json.loads(_trimlab.presets())


def replay(
    trace: Union[str, "os.PathLike[str]"],
    device: Config,
    *,
    format: Optional[str] = None,
    trims: str = "as-recorded",
    fstrim_period_ns: Optional[int] = None,
    lba: str = "check",
    speed: float = 1.0,
    closed_loop: Optional[int] = None,
    skip_bad: bool = False,
    blk_action: str = "D",
    fio_time_unit: str = "us",
) -> dict:
    """Replays a block trace (blkparse, ftrace blk, fio iolog, MSR, MQSim, DiskSim) on the device
    of a config; returns the metrics.json ``trimlab replay`` writes (the same job, the same
    numbers).

    ``trims``: "as-recorded" (online discard), "drop" (no discard) or "fstrim:PERIOD" (e.g.
    "fstrim:1d"; "fstrim" with ``fstrim_period_ns`` also works). ``lba``: "check" or "remap".
    ``closed_loop=N`` ignores the trace's times and keeps N requests outstanding; else ``speed``
    scales them. The other keywords are ``trimlab replay``'s flags of the same name.
    """
    if trims == "fstrim" and fstrim_period_ns is not None:
        trims = f"fstrim:{int(fstrim_period_ns)}ns"
    elif fstrim_period_ns is not None:
        raise TrimlabError(f"fstrim_period_ns is for trims='fstrim', not trims={trims!r}")
    text, origin = _config_text(device, "device")
    return json.loads(
        _trimlab.replay(
            os.fspath(trace),
            text,
            origin,
            format,
            trims,
            lba,
            float(speed),
            closed_loop,
            skip_bad,
            blk_action,
            fio_time_unit,
        )
    )


def experiments() -> dict:
    """Names of the experiments ``reproduce`` takes, with a line about each."""
    return dict(_trimlab.experiments())


def reproduce(name: str, scale: float = 1.0, seed: int = 1) -> dict:
    """Runs one experiment of ``trimlab reproduce``; returns its tables as pandas DataFrames keyed
    by table name, plus "verdicts" (claim, holds, detail) and "params"."""
    import pandas as pd

    report = json.loads(_trimlab.reproduce(name, float(scale), seed))
    out = {t["name"]: pd.DataFrame(t["rows"], columns=t["columns"]) for t in report["tables"]}
    out["verdicts"] = pd.DataFrame(report["verdicts"], columns=["claim", "holds", "detail"])
    out["params"] = pd.DataFrame(report["params"], columns=["name", "value"])
    return out


def _frame(table: dict):
    import pandas as pd

    return pd.DataFrame(table["data"], columns=table["columns"])


def _values(v: Any) -> Any:
    """A grid entry as a JSON list: lists, tuples, ranges and numpy arrays; anything else is left
    for the native side to refuse with a message."""
    if isinstance(v, (list, tuple, range)):
        return list(v)
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return v.tolist()
    return v


def _plain(o: Any) -> Any:
    """numpy scalars (np.int64, np.float32 ...) as plain Python numbers."""
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"{o!r} ({type(o).__name__}) is not a config value")


def sweep(
    base: Config,
    grid: Mapping[str, Iterable[Any]],
    seeds: Iterable[int] = (1,),
    backend: str = "local",
    jobs: Optional[int] = None,
    *,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    shard: Optional[str] = None,
    address: Optional[str] = None,
    chunk_size: int = 8,
):
    """Runs ``base`` for every combination of ``grid`` values and every seed; returns a pandas
    DataFrame with one row per run and the columns of ``trimlab sweep``'s results.csv: run, the
    swept keys (sorted), seed, config_hash, status, error, then the flattened metrics.

    A point whose config is refused is a row with status "failed" and the message; a grid where
    no point is valid (an unknown key) raises TrimlabError before anything runs.

    backend="local": ``jobs`` threads (default: every core). ``out=DIR`` journals rows there and
    writes results.csv/json, so calling again resumes; ``shard="K/N"`` runs a 1/N slice.
    backend="ray": one Ray task per ``chunk_size`` points, on ``ray.init(address=address)`` unless
    Ray is already initialized. Same table as the local backend.
    """
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict of key -> list of values, not {type(grid).__name__}")
    text, origin = _config_text(base, "base")
    grid_json = json.dumps({str(k): _values(v) for k, v in grid.items()}, default=_plain)
    seeds = [int(s) for s in seeds]
    if backend == "local":
        jobs = jobs or os.cpu_count() or 1
        table = _trimlab.sweep(text, origin, grid_json, seeds, int(jobs), None if out is None else os.fspath(out), shard)
        return _frame(json.loads(table))
    if backend == "ray":
        if out is not None or shard is not None:
            raise ValueError("out= and shard= are for backend='local'; Ray spreads the whole grid itself")
        from ._ray import sweep_on_ray

        return _frame(sweep_on_ray(text, origin, grid_json, seeds, address=address, chunk_size=chunk_size))
    raise ValueError(f"backend={backend!r} (accepted: 'local', 'ray')")
