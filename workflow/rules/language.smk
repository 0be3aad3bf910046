# Paper A, appendix B: byte-level language models on text that ships with Python (and user text
# files). Jobs: attnrank.language.jobs; corpora: attnrank.language.corpora (docs/methods.md,
# "Appendix B corpora and complexity").


rule language_corpora:
    """Appendix B: every corpus of the scale with its source, sha256 and complexity measures."""
    input:
        corpus_inputs("tables/language_corpora.parquet"),
    output:
        table=f"{RESULTS}/tables/language_corpora.parquet",
        csv=report(
            f"{RESULTS}/tables/language_corpora.csv",
            caption="../report/language_corpora.rst",
            category="Paper A",
        ),
    log:
        f"{LOGS}/language_corpora.log",
    benchmark:
        f"{LOGS}/benchmarks/language_corpora.tsv"
    conda:
        CONDA_ENV
    threads: 1
    params:
        job=job_params("tables/language_corpora.parquet"),
        code=step_code_hash("language_corpora"),
    shell:
        "python -m attnrank language-corpora --rule language_corpora"
        " --params {params.job:q} --out {output.table} --csv {output.csv} > {log} 2>&1"


rule language_train:
    """Appendix B: byte-level causal Transformers on one corpus, every seed as one vectorized
    program; the ranks of every head's static kernel and realized mixer and the train / validation
    loss at step 0, every early_log_every steps up to early_log_until, every log_every steps and
    the end, and the logit field's ranks and prior share at the same steps (the tables
    language_ranks, language_loss, language_field and language_field_loss are made of these by the
    table rule)."""
    input:
        corpus_inputs("language/train/{corpus}/ranks.parquet"),
    output:
        ranks=f"{RESULTS}/language/train/{{corpus}}/ranks.parquet",
        loss=f"{RESULTS}/language/train/{{corpus}}/loss.parquet",
        field=f"{RESULTS}/language/train/{{corpus}}/field.parquet",
        weights=f"{RESULTS}/language/train/{{corpus}}/weights.npz",
    log:
        f"{LOGS}/language_train/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/language_train/{{corpus}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
        corpus=planned_values("language_train", "corpus"),
    priority: longest_job_first("language_train")
    conda:
        CONDA_ENV
    threads: config["train_threads"]
    params:
        job=job_params("language/train/{corpus}/ranks.parquet"),
        wildcards=wildcards_json,
        device=config["device"],
        code=step_code_hash("language_train"),
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank language-train --rule language_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --ranks {output.ranks} --loss {output.loss} --field {output.field}"
        " --weights {output.weights} 3>&2 > {log} 2>&1"


rule language_rung_train:
    """Appendix B, OPEN-4: the same step on one corpus at a larger rung (the scale's grid with the
    keys of language.scales.<scale>.rungs.<rung> written over it): ranks, loss and the logit field
    (the tables language_field and language_field_loss hold them beside the base rung's)."""
    input:
        corpus_inputs("language/rungs/{rung}/{corpus}/ranks.parquet"),
    output:
        ranks=f"{RESULTS}/language/rungs/{{rung}}/{{corpus}}/ranks.parquet",
        loss=f"{RESULTS}/language/rungs/{{rung}}/{{corpus}}/loss.parquet",
        field=f"{RESULTS}/language/rungs/{{rung}}/{{corpus}}/field.parquet",
        weights=f"{RESULTS}/language/rungs/{{rung}}/{{corpus}}/weights.npz",
    log:
        f"{LOGS}/language_rung_train/{{rung}}/{{corpus}}.log",
    benchmark:
        f"{LOGS}/benchmarks/language_rung_train/{{rung}}/{{corpus}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
        rung=planned_values("language_train", "rung"),
        corpus=planned_values("language_train", "corpus"),
    priority: longest_job_first("language_rung_train")
    conda:
        CONDA_ENV
    threads: config["train_threads"]
    params:
        job=job_params("language/rungs/{rung}/{corpus}/ranks.parquet"),
        wildcards=wildcards_json,
        device=config["device"],
        code=step_code_hash("language_train"),
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
        " python -m attnrank language-train --rule language_rung_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --ranks {output.ranks} --loss {output.loss} --field {output.field}"
        " --weights {output.weights} 3>&2 > {log} 2>&1"
