"""The Ray backend of trimlab.sweep: the grid is expanded and checked here, points go out in
chunks as Ray tasks, and the rows come back to the same table code as the local backend."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

try:
    import ray
except ImportError as e:  # Ray is an optional extra.
    raise ImportError(
        "trimlab.sweep(backend='ray') needs Ray, which is not installed: "
        "pip install 'trimlab[ray]' (or pip install ray), or use backend='local'"
    ) from e

from . import _trimlab


@ray.remote
def _run_chunk(base_text: str, origin: str, points_json: str) -> str:
    return _trimlab.run_points(base_text, origin, points_json)


def sweep_on_ray(
    base_text: str,
    origin: str,
    grid_json: str,
    seeds: List[int],
    *,
    address: Optional[str],
    chunk_size: int,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Dict[str, Any]:
    if chunk_size < 1:
        raise ValueError(f"chunk_size={chunk_size} (must be at least 1)")
    plan = json.loads(_trimlab.plan(base_text, origin, grid_json, seeds))
    if not ray.is_initialized():
        ray.init(address=address)
    base = ray.put(plan["base_text"])
    points = plan["points"]
    futures = [
        _run_chunk.remote(base, plan["origin"], json.dumps(points[i : i + chunk_size]))
        for i in range(0, len(points), chunk_size)
    ]
    done_chunks: Dict[int, List[Any]] = {}
    pending = list(futures)
    finished_points = 0
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for future in ready:
            chunk = json.loads(ray.get(future))
            done_chunks[futures.index(future)] = chunk
            finished_points += len(chunk)
            if progress is not None:
                progress(finished_points, len(points))
    # Rows in plan order whatever order the chunks finished in.
    rows = [row for i in range(len(futures)) for row in done_chunks[i]]
    table: Dict[str, Any] = json.loads(_trimlab.table(plan["keys"], json.dumps(rows)))
    return table
