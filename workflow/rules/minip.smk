# Paper B (Opazo): Min-IP length sweep (B1), scaling in m (B2), witness suite (B3), OOD pools
# (B4), information bound (B5), hand-built constructions. Jobs: attnrank.minip.jobs.


rule minip_train:
    """Train every kernel rank group and the dense baseline of one Min-IP task instance."""
    output:
        metrics=f"{RESULTS}/minip/train/{{experiment}}/{{instance}}/metrics.parquet",
        weights=f"{RESULTS}/minip/train/{{experiment}}/{{instance}}/weights.npz",
    log:
        f"{LOGS}/minip_train/{{experiment}}/{{instance}}.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_train/{{experiment}}/{{instance}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
    priority: longest_job_first("minip_train")
    conda:
        CONDA_ENV
    threads: config["train_threads"]
    params:
        job=job_params("minip/train/{experiment}/{instance}/metrics.parquet"),
        wildcards=wildcards_json,
        device=config["device"],
        code=step_code_hash("minip_train"),
    shell:
        "python -m attnrank minip-train --rule minip_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --metrics {output.metrics} --weights {output.weights} 3>&2 > {log} 2>&1"


rule minip_capacity_train:
    """Capacity or optimization: train at r = V from scratch (two lengths) and from the exact
    construction (the caution on random tokens in docs/methods.md)."""
    output:
        f"{RESULTS}/minip/capacity/{{instance}}/metrics.parquet",
    log:
        f"{LOGS}/minip_capacity_train/{{instance}}.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_capacity_train/{{instance}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
        instance=planned_values("minip_capacity_train", "instance"),
    priority: longest_job_first("minip_capacity_train")
    conda:
        CONDA_ENV
    threads: config["train_threads"]
    params:
        job=job_params("minip/capacity/{instance}/metrics.parquet"),
        wildcards=wildcards_json,
        device=config["device"],
        code=step_code_hash("minip_capacity_train"),
    shell:
        "python -m attnrank minip-capacity --rule minip_capacity_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --metrics {output} 3>&2 > {log} 2>&1"


rule minip_constructions:
    """Evaluate the hand-built constructions (rank 1, 2^m features, dense)."""
    output:
        f"{RESULTS}/tables/minip_constructions.parquet",
    log:
        f"{LOGS}/minip_constructions.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_constructions.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/minip_constructions.parquet"),
        code=step_code_hash("minip_constructions"),
    shell:
        "python -m attnrank minip-constructions --rule minip_constructions --params {params.job:q}"
        " --out {output} > {log} 2>&1"


rule minip_information_bound:
    """B5: transcript lower bound against the bits each trained kernel head carries."""
    input:
        step_inputs("tables/minip_information_bound.parquet"),
    output:
        table=f"{RESULTS}/tables/minip_information_bound.parquet",
        csv=report(
            f"{RESULTS}/tables/minip_information_bound.csv",
            caption="../report/minip_information_bound.rst",
            category="Paper B",
        ),
    log:
        f"{LOGS}/minip_information_bound.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_information_bound.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/minip_information_bound.parquet"),
        code=step_code_hash("minip_information_bound"),
    shell:
        "python -m attnrank minip-information-bound --rule minip_information_bound"
        " --params {params.job:q} --inputs {input} --out {output.table} --csv {output.csv}"
        " > {log} 2>&1"


rule minip_witness_families:
    """The witness-families sweep: every family's table-feature heads rebuilt from their final
    weights, which witness inputs they fail, and per family the measured transition against
    r_lb = min(K, w) and K."""
    input:
        step_inputs("tables/minip_witness_families.parquet"),
    output:
        table=f"{RESULTS}/tables/minip_witness_families.parquet",
        summary=f"{RESULTS}/tables/minip_witness_families_summary.parquet",
        csv=report(
            f"{RESULTS}/tables/minip_witness_families_summary.csv",
            caption="../report/minip_witness_families_summary.rst",
            category="Paper B",
        ),
    log:
        f"{LOGS}/minip_witness_families.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_witness_families.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/minip_witness_families.parquet"),
        code=step_code_hash("minip_witness_families"),
    shell:
        "python -m attnrank minip-witness-families --rule minip_witness_families"
        " --params {params.job:q} --inputs {input} --out {output.table}"
        " --summary {output.summary} --csv {output.csv} > {log} 2>&1"


rule minip_restarts_train:
    """The restart (trap) study, one case: its model retrained on every seed under the recipe and
    each variant, from the training job's init and data stream (docs/methods.md)."""
    output:
        f"{RESULTS}/minip/restarts/{{case}}/metrics.parquet",
    log:
        f"{LOGS}/minip_restarts_train/{{case}}.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_restarts_train/{{case}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
        case=planned_values("minip_restarts_train", "case"),
    priority: longest_job_first("minip_restarts_train")
    conda:
        CONDA_ENV
    threads: config["train_threads"]
    params:
        job=job_params("minip/restarts/{case}/metrics.parquet"),
        wildcards=wildcards_json,
        device=config["device"],
        code=step_code_hash("minip_restarts_train"),
    shell:
        "python -m attnrank minip-restarts --rule minip_restarts_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --metrics {output} 3>&2 > {log} 2>&1"


rule minip_restarts_tables:
    """The restart study's tables: every logged row, and per case × variant the seeds that pass
    the claim's criterion and which seeds failing under the recipe each variant recovers."""
    input:
        step_inputs("tables/minip_restarts.parquet"),
    output:
        table=f"{RESULTS}/tables/minip_restarts.parquet",
        summary=f"{RESULTS}/tables/minip_restarts_summary.parquet",
        csv=report(
            f"{RESULTS}/tables/minip_restarts_summary.csv",
            caption="../report/minip_restarts_summary.rst",
            category="Paper B",
        ),
    log:
        f"{LOGS}/minip_restarts_tables.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_restarts_tables.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/minip_restarts.parquet"),
        code=step_code_hash("minip_restarts_tables"),
    shell:
        "python -m attnrank minip-restarts-tables --rule minip_restarts_tables"
        " --params {params.job:q} --inputs {input} --out {output.table}"
        " --summary {output.summary} --csv {output.csv} > {log} 2>&1"


rule minip_beyond_train:
    """A family beyond the single head (B6, TT-7) on one instance: every budget group and seed as
    one program, on the data and seeds of the B2/B3 job it embeds."""
    output:
        metrics=f"{RESULTS}/minip/beyond/{{instance}}/{{family}}/metrics.parquet",
        weights=f"{RESULTS}/minip/beyond/{{instance}}/{{family}}/weights.npz",
    log:
        f"{LOGS}/minip_beyond_train/{{instance}}/{{family}}.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_beyond_train/{{instance}}/{{family}}.tsv"
    wildcard_constraints:
        scale=SEPARATE,
        instance=planned_values("minip_beyond_train", "instance"),
        family=planned_values("minip_beyond_train", "family"),
    priority: longest_job_first("minip_beyond_train")
    conda:
        CONDA_ENV
    threads: config["train_threads"]
    params:
        job=job_params("minip/beyond/{instance}/{family}/metrics.parquet"),
        wildcards=wildcards_json,
        device=config["device"],
        code=step_code_hash("minip_beyond_train"),
    shell:
        "python -m attnrank minip-beyond --rule minip_beyond_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --metrics {output.metrics} --weights {output.weights} 3>&2 > {log} 2>&1"


rule minip_rank_growth:
    """TT-6's fit as a table: per target and m the smallest rank reaching it, read on the grid
    and between grid points, and both slopes of log2 r on m."""
    input:
        step_inputs("tables/minip_rank_growth.parquet"),
    output:
        f"{RESULTS}/tables/minip_rank_growth.parquet",
    log:
        f"{LOGS}/minip_rank_growth.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_rank_growth.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/minip_rank_growth.parquet"),
        code=step_code_hash("minip_rank_growth"),
    shell:
        "python -m attnrank minip-rank-growth --rule minip_rank_growth"
        " --params {params.job:q} --inputs {input} --out {output} > {log} 2>&1"


rule minip_beyond_growth:
    """Per family line: the smallest budget F reaching each target per m, and the slope of
    log2 F on m with its seed-bootstrap interval (TT-6's fit)."""
    input:
        step_inputs("tables/minip_beyond_growth.parquet"),
    output:
        f"{RESULTS}/tables/minip_beyond_growth.parquet",
    log:
        f"{LOGS}/minip_beyond_growth.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_beyond_growth.tsv"
    conda:
        CONDA_ENV
    params:
        job=job_params("tables/minip_beyond_growth.parquet"),
        code=step_code_hash("minip_beyond_growth"),
    shell:
        "python -m attnrank minip-beyond-growth --rule minip_beyond_growth"
        " --params {params.job:q} --inputs {input} --out {output} > {log} 2>&1"
