"""Figures declare their paper and tables where their code lives (PAPER, TABLES), the registry
collects them from the source, and figures stay light to import."""

import importlib
import subprocess
import sys

import pytest

from attnrank.core.figures import check_inputs, draw, figure_module_name
from attnrank.pipeline.registry import FIGURES


def test_every_registered_figure_has_a_module_with_plot():
    for name in FIGURES:
        assert callable(importlib.import_module(figure_module_name(name)).plot), name


def test_the_registry_collects_what_each_figure_module_declares():
    for name, fig in FIGURES.items():
        module = importlib.import_module(figure_module_name(name))
        assert (fig.paper, fig.tables) == (module.PAPER, tuple(module.TABLES)), name
    assert list(FIGURES)[:2] == ["minip_beyond", "minip_length_sweep"]  # wing by wing
    assert [n.split("_")[0] for n in FIGURES] == sorted(
        (n.split("_")[0] for n in FIGURES), key=("minip", "entropic", "language").index)


def test_a_figure_module_without_its_declarations_is_refused(tmp_path):
    from attnrank.pipeline.registry import collect_figures

    for wing in ("minip", "entropic", "language"):
        (tmp_path / wing / "figures").mkdir(parents=True)
    (tmp_path / "minip" / "figures" / "minip_new.py").write_text('PAPER = "B"\n')
    with pytest.raises(ValueError, match=r"minip_new.py: a figure module must declare TABLES"):
        collect_figures(tmp_path)
    (tmp_path / "minip" / "figures" / "minip_new.py").write_text(
        'PAPER = "B"\nTABLES = ("minip_ood",)\n')
    assert collect_figures(tmp_path)["minip_new"].tables == ("minip_ood",)


def test_draw_refuses_inputs_that_differ_from_the_declared_tables(tmp_path):
    with pytest.raises(ValueError, match="its name must start with a wing"):
        draw("nope", [], tmp_path / "x.pdf", {})
    with pytest.raises(ValueError, match=r"reads the tables minip_witness, minip_constructions"
                                         r".*missing \['minip_constructions'\]"):
        draw("minip_witness", ["t/minip_witness.parquet"], tmp_path / "x.pdf", {})
    with pytest.raises(ValueError, match=r"not declared by it \['minip_ood'\]"):
        check_inputs("minip_witness", ["minip_witness.parquet", "minip_constructions.parquet",
                                       "minip_ood.parquet"])
    with pytest.raises(ValueError, match=r"given twice \['entropic_ladder'\]"):
        check_inputs("entropic_ladder", ["a/entropic_ladder.parquet", "b/entropic_ladder.parquet"])
    check_inputs("minip_witness", ["x/minip_constructions.parquet", "x/minip_witness.parquet"])


def test_figures_and_claims_do_not_import_torch():
    code = ("import sys, importlib; import attnrank.claims; from attnrank.pipeline.registry import FIGURES\n"
            "from attnrank.core.figures import figure_module_name\n"
            "[importlib.import_module(figure_module_name(f)) for f in FIGURES]\n"
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
