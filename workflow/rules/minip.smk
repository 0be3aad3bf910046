# Paper B (Opazo): Min-IP length sweep (B1), scaling in m (B2), witness suite (B3), OOD pools
# (B4), information bound (B5), hand-built constructions, and their figures.

MINIP_TRAIN_CODE = code_hash("experiments/minip.py", "models/kernel.py", "tasks/minip.py",
                             "train.py", "seeding.py")


def minip_instances(experiment):
    g = MINIP_GRID
    if experiment == "length_sweep":
        return [f"N{n}" for n in g["length_sweep"]["lengths"]]
    if experiment == "rank_vs_m":
        return [f"m{m}" for m in g["rank_vs_m"]["ms"]]
    if experiment == "witness":
        return list(g["witness"]["feature_maps"])
    if experiment == "ood":
        return [s["name"] for s in g["ood"]["scales"]]
    raise WorkflowError(f"unknown Min-IP experiment {experiment!r}")


def minip_job(experiment, instance):
    """The resolved parameters of one training job (a JSON object; see experiments/minip.py)."""
    g = MINIP_GRID
    if instance not in minip_instances(experiment):
        raise WorkflowError(f"{experiment}: unknown instance {instance!r}; "
                            f"config has {minip_instances(experiment)}")
    job = {"experiment": experiment, "instance": instance, "seeds": g["seeds"],
           "ranks": g["ranks"], "dense": True, "lr": MINIP["lr"], "warmup": MINIP["warmup"],
           "log_every": MINIP["log_every"], "hidden": MINIP["hidden"],
           "feature": MINIP["feature"], "eval_sequences": MINIP["eval_sequences"],
           "batch": g["random"]["batch"], "steps": g["random"]["steps"]}
    tokens = MINIP["tokens"]
    if experiment == "length_sweep":
        n = int(instance[1:])
        job["data"] = {"kind": "random", "n_tokens": n, "m": g["length_sweep"]["m"],
                       "tokens": tokens}
        job["feature_map"] = g["length_sweep"]["feature_map"]
    elif experiment == "rank_vs_m":
        job["data"] = {"kind": "random", "n_tokens": 3, "m": int(instance[1:]), "tokens": tokens}
        job["feature_map"] = g["rank_vs_m"]["feature_map"]
    elif experiment == "witness":
        w = g["witness"]
        job["data"] = {"kind": "witness", "blocks": w["blocks"], "width": w["width"]}
        job.update(feature_map=instance, ranks=w["ranks"], batch=0, steps=w["steps"])
    else:
        o = g["ood"]
        s = next(s for s in o["scales"] if s["name"] == instance)
        job["data"] = {"kind": "pools", "n_tokens": 3, "m": s["m"], "tokens": tokens,
                       "train_pool": s["train_pool"], "test_pool": s["test_pool"],
                       "share_tokens": o["share_tokens"]}
        job.update(feature_map=o["feature_map"], batch=o["batch"], steps=o["steps"])
    return as_json(job)


def minip_constructions_params():
    g = MINIP_GRID
    c = MINIP["constructions"]
    dense_ms = sorted(set(g["rank_vs_m"]["ms"]) | {g["length_sweep"]["m"]})
    return as_json({"tokens": MINIP["tokens"], "eval_sequences": MINIP["eval_sequences"],
                    "rank1_m": g["length_sweep"]["m"], "lengths": g["length_sweep"]["lengths"],
                    "exp_ms": g["constructions"]["exp_ms"], "exp_betas": c["exp_betas"],
                    "dense_ms": dense_ms, "dense_beta": c["dense_beta"],
                    "witness": {"blocks": g["witness"]["blocks"],
                                "width": g["witness"]["width"]}})


def minip_figure_params():
    g = MINIP_GRID
    return as_json({"scale": SCALE, "target_accuracy": MINIP["target_accuracy"],
                    "exact_accuracy": MINIP["exact_accuracy"],
                    "witness": {"blocks": g["witness"]["blocks"], "width": g["witness"]["width"]}})


def minip_targets():
    return ([f"{RESULTS}/figures/{name}.pdf" for name in MINIP_FIGURE_TABLES]
            + [f"{RESULTS}/tables/minip_information_bound.csv"])


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


def minip_capacity_job(instance):
    c, g = MINIP_GRID["capacity"], MINIP_GRID
    return as_json({"experiment": "capacity", "instance": instance, "seeds": g["seeds"],
                    "data": {"kind": "random", "n_tokens": 3, "m": c["m"], "tokens": MINIP["tokens"]},
                    "lr": MINIP["lr"], "warmup": MINIP["warmup"], "log_every": MINIP["log_every"],
                    "hidden": MINIP["hidden"], "feature": MINIP["feature"],
                    "eval_sequences": MINIP["eval_sequences"], "batch": g["random"]["batch"],
                    "steps": c["steps"], "long_steps": c["long_steps"], "beta": c["beta"]})


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
            p=minip_figure_params(),
            code=code_hash(f"figures/{fig}.py", "figures/__init__.py", "figures/style.py"),
        log:
            f"{LOGS}/figures/{fig}.log",
        conda:
            CONDA_ENV
        shell:
            "python -m attnrank figure {params.figure} --rule {rule} --params {params.p:q}"
            " --inputs {input} --out {output.pdf} > {log} 2>&1"
