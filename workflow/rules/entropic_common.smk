# Paper A (Yoon), the Entropic Bound: job parameters, table and figure lists, targets and the
# config checks (functions only; the rules are in entropic.smk, which includes this file).
import sys

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from attnrank.experiments.entropic_config import check_config as _check_entropic  # noqa: E402

ENTROPIC = config["entropic"]
ENTROPIC_GRID = ENTROPIC["scales"][SCALE]
ENTROPIC_TRAIN_CODE = {
    exp: code_hash(f"experiments/entropic_{exp}.py", "experiments/entropic_common.py", "rank.py",
                   "train.py", "seeding.py", *mods)
    for exp, mods in {
        "surrogate": ["models/surrogate.py", "tasks/operators.py"],
        "ladder": ["experiments/entropic_surrogate.py", "experiments/entropic_attention.py",
                   "models/surrogate.py", "models/attention.py", "tasks/operators.py"],
        "attention": ["models/attention.py", "tasks/teachers.py", "tasks/operators.py"],
        "predict": ["predict.py", "tasks/teachers.py", "tasks/operators.py"],
    }.items()
}


def check_entropic_config():
    """r* ≤ min(N, d), ranks within their matrices, β > 0 and S·N·e ≥ d² (E1); fail before any job."""
    try:
        _check_entropic(ENTROPIC)
    except ValueError as err:
        raise WorkflowError(f"config: {err}") from None


check_entropic_config()


def _beta_tag(beta):
    return f"{beta:g}".replace(".", "p")


def entropic_teachers(kind):
    """Teacher instances of A3 ("attention") or A4 ("predict"): name → {kind, beta}."""
    g = ENTROPIC_GRID["attention" if kind == "attention" else "predict"]
    out = {"linear": {"kind": "linear", "beta": 1.0}}
    for b in g["betas"]:
        out[f"softmax_b{_beta_tag(b)}"] = {"kind": "softmax", "beta": float(b)}
    return out


def _entropic_base(optimizer="adam"):
    opt = ENTROPIC["adam"] if optimizer == "adam" else ENTROPIC["gd"]
    base = {k: ENTROPIC[k] for k in ("n_tokens", "d", "e", "noise_var", "spectrum", "decay",
                                     "taus", "eval_sequences", "calibration_sequences")}
    base.update(lr=opt["lr"], init_std=opt["init_std"], seeds=ENTROPIC_GRID["seeds"])
    if optimizer == "adam":
        base.update(warmup=opt["warmup"], schedule=opt["schedule"])
    else:  # plain GD: constant step size, no warm-up
        base.update(warmup=0, schedule="constant")
    return base


def entropic_job(experiment, instance):
    """The resolved parameters of one Paper A job (a JSON object; see experiments/entropic_*.py)."""
    g = ENTROPIC_GRID
    if experiment == "surrogate":
        if instance not in ("adam", "gd"):
            raise WorkflowError(f"surrogate: unknown optimizer {instance!r} (adam, gd)")
        s = g["surrogate"]
        job = _entropic_base(instance)
        job.update(experiment="surrogate", instance=instance, optimizer=instance, r_star=s["r_star"],
                   ranks=s["ranks"] if instance == "adam" else s["gd_ranks"], n_train=s["n_train"],
                   steps=s["steps"] if instance == "adam" else s["gd_steps"], log_every=s["log_every"])
    elif experiment == "ladder":
        s = g["ladder"]
        if instance not in s["rungs"]:
            raise WorkflowError(f"ladder: unknown rung {instance!r}; config has {s['rungs']}")
        job = _entropic_base()
        job.update(experiment="ladder", instance=instance, r_star=s["r_star"], n_train=s["n_train"],
                   steps=s["steps"], log_every=s["log_every"], positions=s["positions"],
                   chunk=ENTROPIC["attention_chunk"])
    elif experiment == "attention":
        teachers = entropic_teachers("attention")
        if instance not in teachers:
            raise WorkflowError(f"attention: unknown teacher {instance!r}; config has {list(teachers)}")
        s = g["attention"]
        job = _entropic_base()
        job.update(experiment="attention", instance=instance, teacher=teachers[instance],
                   r_star=s["r_star"], ranks=s["ranks"], n_train=s["n_train"], steps=s["steps"],
                   log_every=s["log_every"], chunk=ENTROPIC["attention_chunk"])
    elif experiment == "predict":
        teachers = entropic_teachers("predict")
        if instance not in teachers:
            raise WorkflowError(f"predict: unknown teacher {instance!r}; config has {list(teachers)}")
        s = g["predict"]
        job = {k: ENTROPIC[k] for k in ("n_tokens", "d", "e", "noise_var", "spectrum", "decay",
                                        "taus", "calibration_sequences")}
        job.update(experiment="predict", instance=instance, teacher=teachers[instance],
                   r_star=s["r_star"], S=s["S"], seeds=s["seeds"], mixer_inputs=s["mixer_inputs"],
                   chunk=256)
    else:
        raise WorkflowError(f"unknown Paper A experiment {experiment!r}")
    return as_json(job)


ENTROPIC_OUT = f"{RESULTS}/entropic"


# Tidy tables: stem → (inputs, rows kept, keep only the largest student rank).
ENTROPIC_TABLES = {
    "entropic_surrogate": (lambda: expand(f"{ENTROPIC_OUT}/surrogate/{{o}}/metrics.parquet",
                                          o=["adam", "gd"]), "selected", False),
    "entropic_surrogate_trace": (lambda: expand(f"{ENTROPIC_OUT}/surrogate/{{o}}/metrics.parquet",
                                                o=["adam", "gd"]), "all", True),
    "entropic_ladder": (lambda: expand(f"{ENTROPIC_OUT}/ladder/{{r}}/metrics.parquet",
                                       r=ENTROPIC_GRID["ladder"]["rungs"]), "final", False),
    "entropic_attention": (lambda: expand(f"{ENTROPIC_OUT}/attention/{{t}}/metrics.parquet",
                                          t=list(entropic_teachers("attention"))), "final", False),
    "entropic_attention_trace": (lambda: expand(f"{ENTROPIC_OUT}/attention/{{t}}/metrics.parquet",
                                                t=list(entropic_teachers("attention"))), "all", True),
    "entropic_predict": (lambda: expand(f"{ENTROPIC_OUT}/predict/{{t}}/estimates.parquet",
                                        t=list(entropic_teachers("predict"))), "all", False),
}


def entropic_figure_params():
    return as_json({"scale": SCALE, "headline_tau": ENTROPIC["headline_tau"],
                    "headline_beta": ENTROPIC["headline_beta"], "noise_var": ENTROPIC["noise_var"],
                    "floor": 0.02, "d": ENTROPIC["d"], "n_tokens": ENTROPIC["n_tokens"]})


# One rule per figure, so `snakemake results/<scale>/figures/<name>.pdf` rebuilds just it.
ENTROPIC_FIGURE_TABLES = {
    "entropic_surrogate_phase": ["entropic_surrogate"],
    "entropic_surrogate_recovery": ["entropic_surrogate_trace"],
    "entropic_ladder": ["entropic_ladder"],
    "entropic_attention_native": ["entropic_attention"],
    "entropic_attention_recovery": ["entropic_attention", "entropic_attention_trace"],
    "entropic_predictability": ["entropic_predict"],
}


ENTROPIC_CLAIM_TABLES = [f"{RESULTS}/tables/{t}.parquet" for t in
                         ["entropic_surrogate", "entropic_ladder", "entropic_attention",
                          "entropic_predict"]]


def entropic_targets():
    return [f"{RESULTS}/figures/{name}.pdf" for name in ENTROPIC_FIGURE_TABLES]
