# Paper A (Yoon): the Entropic Bound — A1 linear surrogate, A2 interpolation ladder, A3
# attention-native rank, A4 data-only predictability. Jobs: attnrank.entropic.jobs.

for _exp in ("surrogate", "ladder", "attention"):
    _rule, _wc = f"entropic_{_exp}_train", ENTROPIC_WILDCARD[_exp]

    rule:
        name:
            _rule
        output:
            metrics=f"{RESULTS}/entropic/{_exp}/{{{_wc}}}/metrics.parquet",
            weights=f"{RESULTS}/entropic/{_exp}/{{{_wc}}}/weights.npz",
        log:
            f"{LOGS}/{_rule}/{{{_wc}}}.log",
        benchmark:
            f"{LOGS}/benchmarks/{_rule}/{{{_wc}}}.tsv"
        wildcard_constraints:
            **{_wc: planned_values(_rule, _wc)},
            scale=SEPARATE,
        priority: longest_job_first(_rule)
        conda:
            CONDA_ENV
        threads: config["train_threads"]
        params:
            job=job_params(f"entropic/{_exp}/{{{_wc}}}/metrics.parquet"),
            wildcards=wildcards_json,
            device=config["device"],
            code=step_code_hash(_rule),
            rule_name=_rule,
        shell:
            "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
            " python -m attnrank entropic-train --rule {params.rule_name}"
            " --params {params.job:q} --wildcards {params.wildcards:q} --device {params.device}"
            " --threads {threads} --metrics {output.metrics} --weights {output.weights} 3>&2 > {log} 2>&1"


rule entropic_predict:
    """A4: data-only estimators E1, E2, debiased E2 and the realized mixer for one teacher kind."""
    output:
        table=f"{RESULTS}/entropic/predict/{{teacher}}/estimates.parquet",
        spectra=f"{RESULTS}/entropic/predict/{{teacher}}/spectra.npz",
    log:
        f"{LOGS}/entropic_predict/{{teacher}}.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_predict/{{teacher}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
        teacher=planned_values("entropic_predict", "teacher"),
    priority: longest_job_first("entropic_predict")
    conda:
        CONDA_ENV
    threads: 1
    params:
        job=job_params("entropic/predict/{teacher}/estimates.parquet"),
        wildcards=wildcards_json,
        code=step_code_hash("entropic_predict"),
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank entropic-predict --rule entropic_predict"
        " --params {params.job:q} --wildcards {params.wildcards:q} --threads {threads}"
        " --out {output.table} --spectra {output.spectra} > {log} 2>&1"


rule entropic_open3_candidate:
    """OPEN-3: the candidate E2_centred and its floor rank on every predict job it judges."""
    output:
        f"{RESULTS}/tables/entropic_open3_candidate.parquet",
    log:
        f"{LOGS}/entropic_open3_candidate.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_open3_candidate.tsv"
    priority: longest_job_first("entropic_open3_candidate")
    conda:
        CONDA_ENV
    threads: 1
    params:
        job=job_params("tables/entropic_open3_candidate.parquet"),
        code=step_code_hash("entropic_open3_candidate"),
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank entropic-open3-candidate --rule entropic_open3_candidate"
        " --params {params.job:q} --threads {threads} --out {output} > {log} 2>&1"


rule entropic_open3:
    """OPEN-3: r_attn per cell, every data-only reading's error against it, S_min."""
    input:
        step_inputs("tables/entropic_open3.parquet"),
    output:
        out=f"{RESULTS}/tables/entropic_open3.parquet",
        csv=f"{RESULTS}/tables/entropic_open3.csv",
        errors=f"{RESULTS}/tables/entropic_open3_errors.parquet",
        rattn=f"{RESULTS}/tables/entropic_open3_rattn.parquet",
    log:
        f"{LOGS}/entropic_open3.log",
    benchmark:
        f"{LOGS}/benchmarks/entropic_open3.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/entropic_open3.parquet"),
        code=step_code_hash("entropic_open3"),
    shell:
        "python -m attnrank entropic-open3 --rule entropic_open3 --params {params.job:q}"
        " --inputs {input} --out {output.out} --csv {output.csv} --errors {output.errors}"
        " --rattn {output.rattn} > {log} 2>&1"
