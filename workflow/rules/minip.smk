# Paper B (Opazo): Min-IP length sweep (B1), scaling in m (B2), witness suite (B3), OOD pools
# (B4), information bound (B5), hand-built constructions, and their figures.

MINIP_TRAIN_CODE = code_hash("experiments/minip.py", "models/kernel.py", "tasks/minip.py",
                             "train.py", "seeding.py")


rule minip_train:
    """Train every kernel rank group and the dense baseline of one Min-IP task instance."""
    output:
        metrics=f"{RESULTS}/minip/train/{{experiment}}/{{instance}}/metrics.parquet",
        weights=f"{RESULTS}/minip/train/{{experiment}}/{{instance}}/weights.npz",
    params:
        job=lambda w: minip_job(w.experiment, w.instance),
        wildcards=lambda w: as_json(dict(w.items())),
        device=config["device"],
        code=MINIP_TRAIN_CODE,
    threads: config["train_threads"]
    log:
        f"{LOGS}/minip_train/{{experiment}}/{{instance}}.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_train/{{experiment}}/{{instance}}.tsv"
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank minip-train --rule minip_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --metrics {output.metrics} --weights {output.weights} > {log} 2>&1"


rule minip_capacity_train:
    """Capacity or optimization: train at r = V from scratch (two lengths) and from the exact
    construction (SPEC's caution on random tokens)."""
    output:
        f"{RESULTS}/minip/capacity/{{instance}}/metrics.parquet",
    params:
        job=lambda w: minip_capacity_job(w.instance),
        wildcards=lambda w: as_json(dict(w.items())),
        device=config["device"],
        code=code_hash("experiments/minip_capacity.py", "experiments/minip.py", "models/kernel.py",
                       "tasks/minip.py", "train.py", "seeding.py"),
    wildcard_constraints:
        instance="scratch|scratch_long|construction",
    threads: config["train_threads"]
    log:
        f"{LOGS}/minip_capacity_train/{{instance}}.log",
    benchmark:
        f"{LOGS}/benchmarks/minip_capacity_train/{{instance}}.tsv"
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank minip-capacity --rule minip_capacity_train --params {params.job:q}"
        " --wildcards {params.wildcards:q} --device {params.device} --threads {threads}"
        " --metrics {output} > {log} 2>&1"


rule minip_capacity_table:
    """The capacity probe's rows (every logged step) in one table."""
    input:
        expand(f"{RESULTS}/minip/capacity/{{instance}}/metrics.parquet",
               instance=["scratch", "scratch_long", "construction"]),
    output:
        f"{RESULTS}/tables/minip_capacity.parquet",
    params:
        code=code_hash(),
    log:
        f"{LOGS}/minip_table/capacity.log",
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank minip-table --rule minip_capacity_table --all-steps --inputs {input}"
        " --out {output} > {log} 2>&1"


rule minip_table:
    """Final rows of every task instance of one experiment, in one tidy table."""
    input:
        lambda w: expand(f"{RESULTS}/minip/train/{w.experiment}/{{instance}}/metrics.parquet",
                         instance=minip_instances(w.experiment)),
    output:
        f"{RESULTS}/tables/minip_{{experiment}}.parquet",
    params:
        code=code_hash(),
    log:
        f"{LOGS}/minip_table/{{experiment}}.log",
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank minip-table --rule minip_table --wildcards"
        " '{{\"experiment\": \"{wildcards.experiment}\"}}' --inputs {input} --out {output}"
        " > {log} 2>&1"


rule minip_constructions:
    """Evaluate the hand-built constructions (rank 1, 2^m features, dense)."""
    output:
        f"{RESULTS}/tables/minip_constructions.parquet",
    params:
        p=minip_constructions_params(),
        code=code_hash("experiments/minip_constructions.py", "experiments/minip.py",
                       "models/kernel.py", "tasks/minip.py", "seeding.py"),
    log:
        f"{LOGS}/minip_constructions.log",
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank minip-constructions --rule minip_constructions --params {params.p:q}"
        " --out {output} > {log} 2>&1"


rule minip_information_bound:
    """B5: transcript lower bound against the bits each trained kernel head carries."""
    input:
        expand(f"{RESULTS}/tables/minip_{{experiment}}.parquet",
               experiment=["length_sweep", "rank_vs_m", "witness"]),
    output:
        table=f"{RESULTS}/tables/minip_information_bound.parquet",
        csv=report(f"{RESULTS}/tables/minip_information_bound.csv",
                   caption="../report/minip_information_bound.rst", category="Paper B"),
    params:
        p=as_json({"float_bits": 32}),
        code=code_hash("experiments/minip_constructions.py"),
    log:
        f"{LOGS}/minip_information_bound.log",
    conda:
        CONDA_ENV
    shell:
        "python -m attnrank minip-information-bound --rule minip_information_bound"
        " --params {params.p:q} --inputs {input} --out {output.table} --csv {output.csv}"
        " > {log} 2>&1"


# One rule per figure, so `snakemake results/<scale>/figures/<name>.pdf` rebuilds just it.
MINIP_FIGURE_TABLES = {
    "minip_length_sweep": ["minip_length_sweep", "minip_constructions"],
    "minip_rank_vs_m": ["minip_rank_vs_m", "minip_constructions"],
    "minip_witness": ["minip_witness", "minip_constructions"],
    "minip_ood_pools": ["minip_ood"],
}

for fig, tables in MINIP_FIGURE_TABLES.items():

    rule:
        name:
            f"figure_{fig}"
        input:
            [f"{RESULTS}/tables/{t}.parquet" for t in tables],
        output:
            pdf=report(f"{RESULTS}/figures/{fig}.pdf", caption=f"../report/{fig}.rst",
                       category="Paper B"),
            png=f"{RESULTS}/figures/{fig}.png",
        params:
            figure=fig,
            rule_name=f"figure_{fig}",
            p=minip_figure_params(),
            code=code_hash(f"figures/{fig}.py", "figures/__init__.py", "figures/style.py"),
        log:
            f"{LOGS}/figures/{fig}.log",
        conda:
            CONDA_ENV
        shell:
            "python -m attnrank figure {params.figure} --rule {params.rule_name} --params {params.p:q}"
            " --inputs {input} --out {output.pdf} > {log} 2>&1"
