"""trimlab: a deterministic simulator of flash storage and TRIM, from Python.

    import trimlab
    m = trimlab.run("examples/quick.toml", seed=1)          # metrics.json as a dict
    df = trimlab.sweep("examples/sweeps/base-64mib.toml",
                       {"device.spare_factor": [0.07, 0.1, 0.2], "trim.engine": ["immediate", "none"]},
                       seeds=(1, 2, 3))                    # one row per run, as in results.csv

A config is a path (``str`` or ``os.PathLike``), a dict, or TOML text marked as text:
``trimlab.Config(text)`` or ``config_text=text``. A plain ``str`` is always a path, so a path
such as ``runs/sf=0.1/x.toml`` is never mistaken for TOML. The simulator runs with the GIL
released. Errors are ``trimlab.TrimlabError`` carrying trimlab's message. See docs/sweeps.md.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _trimlab
from ._trimlab import TrimlabError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "run",
    "replay",
    "advise",
    "presets",
    "reproduce",
    "experiments",
    "sweep",
    "Config",
    "ConfigLike",
    "TrimlabError",
    "TrimlabWarning",
]
__version__: str = _trimlab.__version__


class Config:
    """TOML text of a trimlab config, marked as text: ``trimlab.run(trimlab.Config(text))``."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"trimlab.Config takes TOML text (a str), not {type(text).__name__}")
        self.text = text

    def __repr__(self) -> str:
        return f"trimlab.Config({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


class TrimlabWarning(UserWarning):
    """Something the caller should look at that did not stop the call (failed sweep points)."""


#: What a function taking a config accepts: a path, a dict of sections, or ``Config(text)``.
ConfigLike = Union[Mapping[str, Any], str, "os.PathLike[str]", Config]

#: ``progress=``: None (a tqdm bar when tqdm is installed), False (none), or a callable taking
#: (points done, points in all).
Progress = Union[None, bool, Callable[[int, int], Any]]


def _config_text(config: Optional[ConfigLike], text: Optional[str] = None, what: str = "config") -> Tuple[str, str]:
    """(TOML text, origin for messages) of a path, dict or Config, or of ``text``."""
    if text is not None:
        if config is not None:
            raise TypeError(f"give {what} or config_text=, not both")
        return Config(text).text, f"<{what} text>"
    if isinstance(config, Config):
        return config.text, f"<{what} text>"
    if isinstance(config, Mapping):
        return _trimlab.toml_text(json.dumps(config)), f"<{what} dict>"
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if isinstance(path, str) and "\n" in path:
            raise TrimlabError(
                f"{what}: a str is a path, and this one holds line breaks; pass TOML text as "
                "trimlab.Config(text) (or config_text=text to run and sweep)"
            )
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), str(path)
        except OSError as e:
            raise TrimlabError(f"{what}: cannot read {path!s}: {e.strerror}") from None
    if config is None:
        raise TypeError(f"{what} is missing: give a path, a dict, trimlab.Config(text) or config_text=")
    raise TypeError(
        f"{what} must be a path (str or os.PathLike), a dict or trimlab.Config(text), not {type(config).__name__}"
    )


def run(
    config: Optional[ConfigLike] = None,
    seed: Optional[int] = 1,
    set: Optional[Sequence[str]] = None,
    *,
    config_text: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs one configuration; returns the content of metrics.json.

    ``set`` takes ``--set``-style overrides: ``["device.spare_factor=0.1", "trim.engine=none"]``.
    ``seed=None`` uses the config's ``seed`` (else 1), as ``trimlab run`` does.
    """
    text, origin = _config_text(config, config_text)
    result: Dict[str, Any] = json.loads(_trimlab.run(text, origin, seed, list(set or [])))
    return result


def presets() -> List[Dict[str, Any]]:
    """Every device preset with its resolved parameters."""
    result: List[Dict[str, Any]] = json.loads(_trimlab.presets())
    return result


def replay(
    trace: Union[str, "os.PathLike[str]"],
    device: ConfigLike,
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
) -> Dict[str, Any]:
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
    text, origin = _config_text(device, None, "device")
    result: Dict[str, Any] = json.loads(
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
    return result


def _read(path: Union[str, "os.PathLike[str]"], what: str) -> Tuple[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), os.fspath(path)
    except OSError as e:
        raise TrimlabError(f"{what}: cannot read {os.fspath(path)!s}: {e.strerror}") from None


def _device(device: Optional[ConfigLike]) -> Optional[Tuple[str, str]]:
    """A device config's (text, origin); a preset's name (``"nvme-qlc"``) when no such file exists."""
    if device is None:
        return None
    if isinstance(device, str) and not os.path.exists(device) and "\n" not in device:
        names = {p["name"] for p in presets()}
        if device in names:
            return f'[device]\npreset = "{device}"\n', f"preset {device}"
    return _config_text(device, None, "device")


def advise(
    trace: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    config: Optional[ConfigLike] = None,
    fio: Optional[Union[str, "os.PathLike[str]"]] = None,
    strace: Optional[Union[str, "os.PathLike[str]"]] = None,
    root: Optional[str] = None,
    filebench: Optional[Union[str, "os.PathLike[str]"]] = None,
    device: Optional[ConfigLike] = None,
    set: Optional[Sequence[str]] = None,
    fstrim_periods: Optional[Sequence[str]] = None,
    mapping_units: Optional[Sequence[str]] = None,
    as_is: bool = False,
    utilization: float = 0.70,
    rounds: int = 25,
    churn: float = 2.0,
    format: Optional[str] = None,
) -> Dict[str, Any]:
    """``trimlab advise``: online discard, periodic fstrim or none, for what you have. Give one
    of a block ``trace`` (path), a ``config`` whose workload is file-level, a ``fio`` job file,
    an ``strace`` of a program (with ``root``, the directory its paths are under) or a
    ``filebench`` model, and optionally the ``device`` (a config, or a preset's name).

    File workloads (config, strace, Filebench) are aged to ``utilization`` and repeated up to
    ``rounds`` times toward steady state unless ``as_is``; a fio job runs once with its commands
    recorded and is advised on as a trace. Returns ``recommendation``, ``reason``, ``tables``
    (pandas DataFrames by name), ``params``, ``notes``, ``warnings`` and the raw ``report``.
    """
    import pandas as pd

    given = [k for k, v in (("trace", trace), ("config", config), ("fio", fio), ("strace", strace), ("filebench", filebench)) if v is not None]
    if len(given) != 1:
        raise TypeError("give exactly one of trace, config, fio, strace or filebench")
    kind = given[0]
    if root is not None and kind != "strace":
        raise TypeError("root is the directory an strace's paths are under: it goes with strace=")
    if config is not None:
        if device is not None:
            raise TypeError("a config brings its own device; device= is for a trace, fio, strace or filebench")
        subject, origin = _config_text(config, None, "config")
    elif fio is not None:
        subject, origin = _read(fio, "fio")
    elif filebench is not None:
        subject, origin = _read(filebench, "filebench")
    elif strace is not None:
        if root is None:
            raise TypeError("strace= needs root=, the directory under which the program's paths are replayed")
        subject = os.path.abspath(os.fspath(strace))
        origin = subject
    else:
        assert trace is not None
        subject = os.fspath(trace)
        origin = subject
    file_level = kind in ("config", "strace", "filebench")
    life = None if (as_is or not file_level) else (float(utilization), int(rounds), float(churn))
    out = json.loads(
        _trimlab.advise(
            kind,
            subject,
            origin,
            _device(device),
            list(set or []),
            root,
            list(fstrim_periods or []),
            list(mapping_units or []),
            life,
            format,
        )
    )
    report = out["report"]
    params = dict(report["params"])
    return {
        "recommendation": params.get("recommendation"),
        "reason": params.get("reason"),
        "tables": {t["name"]: pd.DataFrame(t["rows"], columns=t["columns"]) for t in report["tables"]},
        "params": params,
        "notes": report.get("notes", []),
        "warnings": out["warnings"],
        "report": report,
    }


def experiments() -> Dict[str, str]:
    """Names of the experiments ``reproduce`` takes, with a line about each."""
    return dict(_trimlab.experiments())


def reproduce(name: str, scale: float = 1.0, seed: int = 1) -> Dict[str, "pd.DataFrame"]:
    """Runs one experiment of ``trimlab reproduce``; returns its tables as pandas DataFrames keyed
    by table name, plus "verdicts" (claim, holds, detail) and "params"."""
    import pandas as pd

    report = json.loads(_trimlab.reproduce(name, float(scale), seed))
    out = {t["name"]: pd.DataFrame(t["rows"], columns=t["columns"]) for t in report["tables"]}
    out["verdicts"] = pd.DataFrame(report["verdicts"], columns=["claim", "holds", "detail"])
    out["params"] = pd.DataFrame(report["params"], columns=["name", "value"])
    return out


def _frame(table: Dict[str, Any]) -> "pd.DataFrame":
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
    base: Optional[ConfigLike],
    grid: Mapping[str, Iterable[Any]],
    seeds: Iterable[int] = (1,),
    backend: str = "local",
    jobs: Optional[int] = None,
    *,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    shard: Optional[str] = None,
    address: Optional[str] = None,
    chunk_size: int = 8,
    progress: Progress = None,
    config_text: Optional[str] = None,
) -> "pd.DataFrame":
    """Runs ``base`` for every combination of ``grid`` values and every seed; returns a pandas
    DataFrame with one row per run and the columns of ``trimlab sweep``'s results.csv: run, the
    swept keys (sorted), seed, config_hash, status, error, then the flattened metrics.

    A point whose config is refused is a row with status "failed" and its message in the "error"
    column, and the call warns (``TrimlabWarning``) with the count and the first messages; a grid
    where no point is valid (an unknown key) raises TrimlabError before anything runs.

    backend="local": ``jobs`` threads (default: every core). ``out=DIR`` journals rows there and
    writes results.csv/json, so calling again resumes; ``shard="K/N"`` runs a 1/N slice.
    backend="ray": one Ray task per ``chunk_size`` points, on ``ray.init(address=address)`` unless
    Ray is already initialized. Same table as the local backend.

    ``progress``: None shows a tqdm bar when tqdm is installed; False shows nothing; a callable
    is called with (points done, points in all) as rows come in.
    """
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict of key -> list of values, not {type(grid).__name__}")
    text, origin = _config_text(base, config_text, "base")
    grid_json = json.dumps({str(k): _values(v) for k, v in grid.items()}, default=_plain)
    seed_list = [int(s) for s in seeds]
    with _progress_callback(progress) as report:
        if backend == "local":
            threads = jobs or os.cpu_count() or 1
            out_dir = None if out is None else os.fspath(out)
            table = _trimlab.sweep(text, origin, grid_json, seed_list, int(threads), out_dir, shard, report)
            frame = _frame(json.loads(table))
        elif backend == "ray":
            if out is not None or shard is not None:
                raise ValueError("out= and shard= are for backend='local'; Ray spreads the whole grid itself")
            from ._ray import sweep_on_ray

            rows = sweep_on_ray(text, origin, grid_json, seed_list, address=address, chunk_size=chunk_size, progress=report)
            frame = _frame(rows)
        else:
            raise ValueError(f"backend={backend!r} (accepted: 'local', 'ray')")
    _warn_failed(frame)
    return frame


class _progress_callback:
    """The callable ``progress=`` asks for, as a context manager that closes a tqdm bar."""

    def __init__(self, progress: Progress) -> None:
        self._bar: Any = None
        self._user: Optional[Callable[[int, int], Any]] = None
        if callable(progress):
            self._user = progress
        elif progress is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=0, unit="point", desc="trimlab.sweep", leave=False)
        elif progress is not False:
            raise TypeError(f"progress must be None, False or a callable, not {progress!r}")

    def __enter__(self) -> Optional[Callable[[int, int], None]]:
        if self._user is None and self._bar is None:
            return None
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._user is not None:
            self._user(done, total)
        if self._bar is not None:
            self._bar.total = total
            self._bar.n = done
            self._bar.refresh()

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()


def _warn_failed(frame: "pd.DataFrame") -> None:
    """Warns with the count and first messages of the failed points (issue 25: they passed
    silently)."""
    if "status" not in frame.columns:
        return
    failed = frame[frame["status"] == "failed"]
    if len(failed) == 0:
        return
    first = "; ".join(str(m) for m in failed["error"].head(3))
    warnings.warn(
        f"trimlab.sweep: {len(failed)} of {len(frame)} points failed (their messages are in the "
        f"'error' column); first: {first}",
        TrimlabWarning,
        stacklevel=3,
    )
