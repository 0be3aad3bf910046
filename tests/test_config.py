"""config.yaml validates; bad values are refused with a message that names the key."""

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


@pytest.fixture()
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_shipped_config_is_valid(config):
    validate(copy.deepcopy(config), SCHEMA)


def _error(cfg):
    with pytest.raises(WorkflowError) as err:
        validate(cfg, SCHEMA)
    return str(err.value)


def test_negative_rank_is_refused_naming_the_key(config):
    config["minip"]["scales"]["full"]["ranks"][0] = -1
    msg = _error(config)
    assert "-1" in msg and "ranks" in msg and "minimum" in msg


def test_unknown_scale_is_refused_naming_the_key(config):
    config["scale"] = "huge"
    msg = _error(config)
    assert "huge" in msg and "scale" in msg


def test_unknown_key_is_refused(config):
    config["minip"]["lr_typo"] = 1
    assert "lr_typo" in _error(config)


def test_the_snakefile_check_refuses_an_unknown_scale(config):
    """What the Snakefile raises on (``configcheck.config_problems``), in-process: the one
    ``snakemake -n`` start for the schema path is tests/test_config_refusals.py's."""
    from attnrank.pipeline import configcheck

    config["scale"] = "huge"
    problems = configcheck.config_problems(config, configcheck.load_schema(Path(SCHEMA)))
    assert problems == ["config: scale = 'huge': one of full, smoke"]
