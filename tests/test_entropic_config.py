"""Paper A config: bad values are refused at validation with a message that names the key."""

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from attnrank.entropic.jobs import check_entropic_config as check_config

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


@pytest.fixture()
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_shipped_entropic_config_passes_every_check(config):
    validate(copy.deepcopy(config), SCHEMA)
    check_config(config["entropic"])


def test_the_wings_names_are_the_configs_and_the_trainers(config):
    """The identities declared once in entropic.jobs: the optimizers are core.train's, the ladder
    rungs and the teacher values are the ones the config and its schema spell."""
    from attnrank.core.train import OPTIMIZERS
    from attnrank.entropic import jobs

    assert jobs.OPTIMIZERS == OPTIMIZERS
    for scale in config["entropic"]["scales"].values():
        assert set(scale["ladder"]["rungs"]) <= set(jobs.RUNGS)
    schema = yaml.safe_load(Path(SCHEMA).read_text())
    values = schema["properties"]["entropic"]["properties"]["teacher_values"]["enum"]
    assert tuple(values) == jobs.TEACHER_VALUES


@pytest.mark.parametrize("exp", ["surrogate", "attention", "predict"])
def test_r_star_above_min_n_d_is_refused_naming_the_key(config, exp):
    ent = config["entropic"]
    ent["scales"]["smoke"][exp]["r_star"] = [2, 17]  # min(N, d) = 16
    with pytest.raises(ValueError, match=rf"entropic\.scales\.smoke\.{exp}\.r_star.*17.*16"):
        check_config(ent)


def test_ladder_r_star_is_checked_too(config):
    config["entropic"]["scales"]["full"]["ladder"]["r_star"] = 20
    with pytest.raises(ValueError, match=r"entropic\.scales\.full\.ladder\.r_star"):
        check_config(config["entropic"])


def test_ranks_beyond_their_matrix_are_refused(config):
    ent = copy.deepcopy(config["entropic"])
    ent["scales"]["smoke"]["attention"]["ranks"] = [1, 17]
    with pytest.raises(ValueError, match=r"attention\.ranks"):
        check_config(ent)
    ent = copy.deepcopy(config["entropic"])
    ent["scales"]["smoke"]["surrogate"]["gd_ranks"] = [33]
    with pytest.raises(ValueError, match=r"surrogate\.gd_ranks"):
        check_config(ent)


def test_s_below_e1_unknowns_is_refused_naming_the_key(config):
    ent = config["entropic"]
    ent["e"] = 1  # d² = 256 unknowns, N·e = 32 equations per sequence: S ≥ 8
    ent["scales"]["full"]["predict"]["S"] = [4, 32]
    with pytest.raises(ValueError, match=r"entropic\.scales\.full\.predict\.S.*\[4\].*256"):
        check_config(ent)


@pytest.mark.parametrize("path", [("scales", "full", "attention", "betas"),
                                  ("scales", "smoke", "predict", "betas")])
@pytest.mark.parametrize("beta", [0, -1.5])
def test_non_positive_beta_is_refused_by_the_schema_naming_the_key(config, path, beta):
    node = config["entropic"]
    for key in path:
        node = node[key]
    node[0] = beta
    with pytest.raises(WorkflowError) as err:
        validate(config, SCHEMA)
    msg = str(err.value)
    assert "exclusiveMinimum" in msg and "betas" in msg and str(beta) in msg
    with pytest.raises(ValueError, match="β must be > 0"):
        check_config(config["entropic"])


def test_headline_beta_must_be_positive(config):
    config["entropic"]["headline_beta"] = 0
    with pytest.raises(WorkflowError, match="headline_beta"):
        validate(config, SCHEMA)


def test_the_snakefile_check_refuses_a_bad_r_star(config):
    """What the Snakefile raises on (``configcheck.config_problems``), in-process: the one
    ``snakemake -n`` start for the cross-key path is tests/test_config_refusals.py's."""
    from attnrank.pipeline import configcheck

    config["entropic"]["scales"]["smoke"]["attention"]["r_star"] = [40]
    problems = configcheck.config_problems(config, configcheck.load_schema(Path(SCHEMA)))
    assert any("entropic.scales.smoke.attention.r_star" in p for p in problems), problems
