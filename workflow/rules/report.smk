# Tables, figures, claims verdicts and the provenance audit (the DAG's last step).


rule table:
    """Concatenate the per-job metrics tables of one result table, keeping some rows."""
    input:
        step_inputs("tables/{name}.parquet"),
    output:
        f"{RESULTS}/tables/{{name}}.parquet",
    log:
        f"{LOGS}/tables/{{name}}.log",
    benchmark:
        f"{LOGS}/benchmarks/tables/{{name}}.tsv"
    wildcard_constraints:
        name="|".join(t for t, spec in TABLES.items() if spec.step == "table"),
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/{name}.parquet"),
        wildcards=wildcards_json,
        code=step_code_hash("table"),
    shell:
        "python -m attnrank table --rule table --params {params.job:q}"
        " --wildcards {params.wildcards:q} --inputs {input} --out {output} > {log} 2>&1"


# One rule per figure, so `snakemake results/<scale>/figures/<name>.pdf` rebuilds just it; the
# report shows the PNG.
for _fig, _spec in FIGURES.items():

    rule:
        name:
            f"figure_{_fig}"
        input:
            step_inputs(f"figures/{_fig}.pdf"),
        output:
            pdf=f"{RESULTS}/figures/{_fig}.pdf",
            png=report(
                f"{RESULTS}/figures/{_fig}.png",
                caption=f"../report/{_fig}.rst",
                category=f"Paper {_spec.paper}",
            ),
        log:
            f"{LOGS}/figures/{_fig}.log",
        benchmark:
            f"{LOGS}/benchmarks/figures/{_fig}.tsv"
        conda:
            CONDA_ENV
        params:
            figure=_fig,
            rule_name=f"figure_{_fig}",
            job=job_params(f"figures/{_fig}.pdf"),
            code=step_code_hash("figure", _fig),
        shell:
            "python -m attnrank figure {params.figure} --rule {params.rule_name}"
            " --params {params.job:q} --inputs {input} --out {output.pdf} > {log} 2>&1"


# A mistyped figure name: refused while the DAG is built, with the names (instead of Snakemake's
# bare "No rule to produce"). The constraint sits inside the whole output pattern, where a figure's
# name is followed by its extension: a known name never matches this rule.
rule unknown_figure:
    input:
        unknown_figure,
    output:
        f"{RESULTS}/figures/{{name}}.{{ext}}",
    wildcard_constraints:
        name=f"(?!(?:{'|'.join(FIGURES)})\\.)[^/]+",
        ext="pdf|png",


rule claims:
    """Evaluate every paper claim (TT-n, EB-n) on the tables: pass, fail or not run."""
    input:
        step_inputs("claims.md"),
    output:
        md=f"{RESULTS}/claims.md",
        csv=f"{RESULTS}/claims.csv",
        html=report(f"{RESULTS}/claims.html", caption="../report/claims.rst", category="Claims"),
    log:
        f"{LOGS}/claims.log",
    benchmark:
        f"{LOGS}/benchmarks/claims.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("claims.md"),
        code=step_code_hash("claims"),
    shell:
        "python -m attnrank claims --rule claims --params {params.job:q} --inputs {input}"
        " --md {output.md} --csv {output.csv} --html {output.html} > {log} 2>&1"


rule audit:
    """Every artifact against its sidecar, the input chain, and what this checkout and config
    would produce (missing, modified, broken chain, stale, orphaned); fails on any finding."""
    input:
        lambda w: [f"results/{w.scale}/{t}" for t in PLANS[w.scale].targets],
    output:
        f"{RESULTS}/audit.json",
    log:
        f"{LOGS}/audit.log",
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank audit results/{wildcards.scale} --scale {wildcards.scale}"
        " --json {output} > {log} 2>&1"
