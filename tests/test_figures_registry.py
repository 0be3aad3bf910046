"""Figures read their names and tables from attnrank.registry.FIGURES, and stay light to import."""

import importlib
import subprocess
import sys

import pytest

from attnrank.figures import check_inputs, draw
from attnrank.registry import FIGURES


def test_every_registered_figure_has_a_module_with_plot():
    for name in FIGURES:
        assert callable(importlib.import_module(f"attnrank.figures.{name}").plot), name


def test_draw_refuses_inputs_that_differ_from_the_registry(tmp_path):
    with pytest.raises(ValueError, match="unknown figure 'nope'"):
        draw("nope", [], tmp_path / "x.pdf", {})
    with pytest.raises(ValueError, match=r"reads the tables minip_witness, minip_constructions"
                                         r".*missing \['minip_constructions'\]"):
        draw("minip_witness", ["t/minip_witness.parquet"], tmp_path / "x.pdf", {})
    with pytest.raises(ValueError, match=r"not registered for it \['minip_ood'\]"):
        check_inputs("minip_witness", ["minip_witness.parquet", "minip_constructions.parquet",
                                       "minip_ood.parquet"])
    with pytest.raises(ValueError, match=r"given twice \['entropic_ladder'\]"):
        check_inputs("entropic_ladder", ["a/entropic_ladder.parquet", "b/entropic_ladder.parquet"])
    check_inputs("minip_witness", ["x/minip_constructions.parquet", "x/minip_witness.parquet"])


def test_figures_and_claims_do_not_import_torch():
    code = ("import sys, importlib; import attnrank.claims; from attnrank.registry import FIGURES\n"
            "[importlib.import_module(f'attnrank.figures.{f}') for f in FIGURES]\n"
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
