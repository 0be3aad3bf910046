# attnrank: reproduce "The Entropic Bound for Transformers" and "Three Tokens Force Exponential
# Feature Rank in Nonnegative Kernel Attention" from nothing.
#   snakemake --cores all                        full reproduction (paper scale)
#   snakemake --cores all --config scale=smoke   the same DAG on small grids
#   snakemake results/smoke/figures/minip_witness.pdf   one figure: the scale follows from the path
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/minip.smk"
include: "workflow/rules/entropic.smk"
include: "workflow/rules/language.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        all_targets(),
    default_target: True
