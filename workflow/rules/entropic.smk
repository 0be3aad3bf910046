# Paper A (Yoon): the Entropic Bound — A1 linear surrogate, A2 interpolation ladder, A3
# attention-native rank, A4 data-only predictability, and their figures. Job parameters, table and
# figure lists and the config checks live in entropic_common.smk.


include: "entropic_common.smk"


rule entropic_surrogate_train:
    """A1: every rank × r* × seed of the linear surrogate, with one optimizer (adam | gd)."""
    output:
        metrics=f"{ENTROPIC_OUT}/surrogate/{{optimizer}}/metrics.parquet",
        weights=f"{ENTROPIC_OUT}/surrogate/{{optimizer}}/weights.npz",
    wildcard_constraints:
        optimizer="adam|gd",
    params:
        job=lambda w: entropic_job("surrogate", w.optimizer),
        wildcards=lambda w: as_json(dict(w.items())),
        device=config["device"],
        code=ENTROPIC_TRAIN_CODE["surrogate"],
    threads: config["train_threads"]
    log:
        f"{LOGS}/entropic_surrogate_train/{{optimizer}}.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_surrogate_train/{{optimizer}}.tsv"
    conda:
        CONDA_ENV
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank entropic-train --rule entropic_surrogate_train"
        " --params {params.job:q} --wildcards {params.wildcards:q} --device {params.device}"
        " --threads {threads} --metrics {output.metrics} --weights {output.weights} > {log} 2>&1"


rule entropic_ladder_train:
    """A2: one rung of the interpolation ladder (B0–B3, B1/B2 with positions), every seed."""
    output:
        metrics=f"{ENTROPIC_OUT}/ladder/{{rung}}/metrics.parquet",
        weights=f"{ENTROPIC_OUT}/ladder/{{rung}}/weights.npz",
    wildcard_constraints:
        rung="B[0-3](_pos)?",
    params:
        job=lambda w: entropic_job("ladder", w.rung),
        wildcards=lambda w: as_json(dict(w.items())),
        device=config["device"],
        code=ENTROPIC_TRAIN_CODE["ladder"],
    threads: config["train_threads"]
    log:
        f"{LOGS}/entropic_ladder_train/{{rung}}.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_ladder_train/{{rung}}.tsv"
    conda:
        CONDA_ENV
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank entropic-train --rule entropic_ladder_train"
        " --params {params.job:q} --wildcards {params.wildcards:q} --device {params.device}"
        " --threads {threads} --metrics {output.metrics} --weights {output.weights} > {log} 2>&1"


rule entropic_attention_train:
    """A3: every rank × r* × seed of rank-r attention students of one teacher (linear | softmax β)."""
    output:
        metrics=f"{ENTROPIC_OUT}/attention/{{teacher}}/metrics.parquet",
        weights=f"{ENTROPIC_OUT}/attention/{{teacher}}/weights.npz",
    wildcard_constraints:
        teacher="linear|softmax_b[0-9p]+",
    params:
        job=lambda w: entropic_job("attention", w.teacher),
        wildcards=lambda w: as_json(dict(w.items())),
        device=config["device"],
        code=ENTROPIC_TRAIN_CODE["attention"],
    threads: config["train_threads"]
    log:
        f"{LOGS}/entropic_attention_train/{{teacher}}.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_attention_train/{{teacher}}.tsv"
    conda:
        CONDA_ENV
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank entropic-train --rule entropic_attention_train"
        " --params {params.job:q} --wildcards {params.wildcards:q} --device {params.device}"
        " --threads {threads} --metrics {output.metrics} --weights {output.weights} > {log} 2>&1"


rule entropic_predict:
    """A4: data-only estimators E1, E2, debiased E2 and the realized mixer for one teacher kind."""
    output:
        table=f"{ENTROPIC_OUT}/predict/{{teacher}}/estimates.parquet",
        spectra=f"{ENTROPIC_OUT}/predict/{{teacher}}/spectra.npz",
    wildcard_constraints:
        teacher="linear|softmax_b[0-9p]+",
    params:
        job=lambda w: entropic_job("predict", w.teacher),
        wildcards=lambda w: as_json(dict(w.items())),
        code=ENTROPIC_TRAIN_CODE["predict"],
    threads: 1
    log:
        f"{LOGS}/entropic_predict/{{teacher}}.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_predict/{{teacher}}.tsv"
    conda:
        CONDA_ENV
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank entropic-predict --rule entropic_predict"
        " --params {params.job:q} --wildcards {params.wildcards:q} --threads {threads}"
        " --out {output.table} --spectra {output.spectra} > {log} 2>&1"


for _stem, (_inputs, _select, _max_rank) in ENTROPIC_TABLES.items():

    rule:
        name:
            f"table_{_stem}"
        input:
            _inputs(),
        output:
            f"{RESULTS}/tables/{_stem}.parquet",
        params:
            select=_select,
            flag="--max-rank-only" if _max_rank else "",
            rule_name=f"table_{_stem}",
            wildcards=as_json({"table": _stem}),
            code=code_hash(),
        log:
            f"{LOGS}/tables/{_stem}.log",
        conda:
            CONDA_ENV
        shell:
            "python -m attnrank entropic-table --rule {params.rule_name} --wildcards {params.wildcards:q}"
            " --select {params.select} {params.flag} --inputs {input} --out {output} > {log} 2>&1"


for _fig, _tables in ENTROPIC_FIGURE_TABLES.items():

    rule:
        name:
            f"figure_{_fig}"
        input:
            [f"{RESULTS}/tables/{t}.parquet" for t in _tables],
        output:
            pdf=report(f"{RESULTS}/figures/{_fig}.pdf", caption=f"../report/{_fig}.rst",
                       category="Paper A"),
            png=f"{RESULTS}/figures/{_fig}.png",
        params:
            figure=_fig,
            rule_name=f"figure_{_fig}",
            p=entropic_figure_params(),
            code=code_hash(f"figures/{_fig}.py", "figures/__init__.py", "figures/style.py"),
        log:
            f"{LOGS}/figures/{_fig}.log",
        conda:
            CONDA_ENV
        shell:
            "python -m attnrank figure {params.figure} --rule {params.rule_name} --params {params.p:q}"
            " --inputs {input} --out {output.pdf} > {log} 2>&1"
