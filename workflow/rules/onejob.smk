# One job per rule (config one_job_per_rule, the smoke scale by default): every job of a training
# or data-only compute rule at such a scale runs in one process, one Snakemake job named
# <scale>_<step>, instead of one process each (attnrank.pipeline.onejob). Each job computes what
# it computes alone, with its own sidecars; only the processes' start-up is saved.

for _name, _job in ONE_JOBS.items():

    rule:
        name:
            _name
        input:
            [f for r in _job.runs if r.step == "language_train" for f in corpus_files(r.params)],
        output:
            _job.outputs(),
        log:
            f"logs/{_job.scale}/{_name}.log",
        benchmark:
            f"logs/{_job.scale}/benchmarks/{_name}.tsv"
        priority: one_job_priority(_job)
        conda:
            CONDA_ENV
        threads: config["train_threads"] if STEPS[_job.step].kind == "train" else 1
        params:
            jobs=json.dumps(
                _job.argvs(config["device"], config["train_threads"]), separators=(",", ":")
            ),
            code=step_code_hash(_job.step),
        shell:
            "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads}"
            " python -m attnrank run-jobs --jobs {params.jobs:q} 3>&2 > {log} 2>&1"
