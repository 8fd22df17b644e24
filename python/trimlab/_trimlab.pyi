# Types of the native module (python/src/lib.rs). Every function takes and returns JSON or TOML
# text; trimlab/__init__.py turns it into dicts and DataFrames. `mypy.stubtest trimlab._trimlab`
# (python/tests/test_typing.py) checks this file against the built module.
from typing import Callable, List, Optional, Tuple

__all__ = ['TrimlabError', '__version__', 'run', 'presets', 'toml_text', 'sweep', 'plan', 'run_points', 'table', 'replay', 'reproduce', 'experiments', 'advise']

__version__: str

class TrimlabError(Exception): ...

def run(text: str, origin: str, seed: Optional[int] = None, set: List[str] = ...) -> str: ...
def toml_text(json: str) -> str: ...
def presets() -> str: ...
def sweep(
    base: str,
    origin: str,
    grid: str,
    seeds: List[int],
    jobs: int,
    out: Optional[str] = None,
    shard: Optional[str] = None,
    progress: Optional[Callable[[int, int], object]] = None,
) -> str: ...
def plan(base: str, origin: str, grid: str, seeds: List[int]) -> str: ...
def run_points(base_text: str, origin: str, points: str) -> str: ...
def table(keys: List[str], rows: str) -> str: ...
def replay(
    trace: str,
    device: str,
    origin: str,
    format: Optional[str] = None,
    trims: str = "as-recorded",
    lba: str = "check",
    speed: float = 1.0,
    closed_loop: Optional[int] = None,
    skip_bad: bool = False,
    blk_action: str = "D",
    fio_time_unit: str = "us",
) -> str: ...
def reproduce(name: str, scale: float = 1.0, seed: int = 1) -> str: ...
def experiments() -> List[Tuple[str, str]]: ...
def advise(
    kind: str,
    subject: str,
    origin: str,
    device: Optional[Tuple[str, str]] = None,
    set: List[str] = ...,
    root: Optional[str] = None,
    fstrim_periods: List[str] = ...,
    mapping_units: List[str] = ...,
    life: Optional[Tuple[float, int, float]] = None,
    format: Optional[str] = None,
) -> str: ...
