"""Shared fixtures: the repository's example configs, and a small fast base config."""

import os
import pathlib

import pytest

import trimlab

REPO = pathlib.Path(__file__).resolve().parents[2]

# A 16 MiB drive written once after a fill: a run takes a few milliseconds.
SMALL = """
[device]
preset = "nvme-tlc"
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
logical_bytes = "16MiB"
pages_per_block = 32
spare_factor = 0.2
[workload]
trim_fraction = 0.1
writes = "1x"
precondition = "fill"
"""


@pytest.fixture
def repo():
    return REPO


@pytest.fixture
def small():
    """The small config as TOML text, marked as text (a plain str is a path)."""
    return trimlab.Config(SMALL)


def ray_required():
    """CI sets TRIMLAB_REQUIRE_RAY=1 so that the Ray tests cannot skip there."""
    return os.environ.get("TRIMLAB_REQUIRE_RAY") == "1"
