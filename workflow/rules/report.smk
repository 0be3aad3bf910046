# Claims verdicts over every result table, and the list of final targets.

CLAIM_TABLES = [f"{RESULTS}/tables/{t}.parquet" for t in
                ["minip_length_sweep", "minip_rank_vs_m", "minip_witness", "minip_ood",
                 "minip_constructions", "minip_capacity"]] + ENTROPIC_CLAIM_TABLES


rule claims:
    """Evaluate every paper claim (TT-n, EB-n) on the tables: pass, fail or not run."""
    input:
        CLAIM_TABLES,
    output:
        md=report(f"{RESULTS}/claims.md", caption="../report/claims.rst", category="Claims"),
        csv=f"{RESULTS}/claims.csv",
    params:
        p=as_json({"scale": SCALE, "minip": MINIP, "minip_grid": MINIP_GRID,
                   "entropic": ENTROPIC, "entropic_grid": ENTROPIC_GRID}),
        code=code_hash("claims.py"),
    log:
        f"{LOGS}/claims.log",
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank claims --rule claims --params {params.p:q} --inputs {input}"
        " --md {output.md} --csv {output.csv} > {log} 2>&1"
