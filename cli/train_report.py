"""What ``lastedge train`` reports after a fit: metrics, the summary lines, and what a Ctrl-C kept."""

from __future__ import annotations

from typing import Any


def step_trials_notice(estimator: Any) -> str:
    """What an SGD/Adam fit does before its progress bar shows: one trial run per step size."""
    from lastedge.train.sgd import step_trials

    steps, trial_iter = step_trials(estimator)
    return (f"lastedge train: choosing the step size: {len(steps)} trial runs of "
            f"{trial_iter:,} steps, then the {int(estimator.max_iter):,}-step "
            "run (its progress bar follows)")


def interrupted_record(estimator: Any, method: str, stopped_after: int) -> dict[str, Any]:
    """What a fit stopped by Ctrl-C kept, for the summary and the model's metadata: LAST's DCA
    iterations; SGD/Adam's final-run steps or (no ``history_``: stopped in the step trials) the
    trial run kept."""
    from lastedge.train.sgd import step_trials

    if method == "last":
        return {"after_dca_iteration": stopped_after, "max_dca_iter": int(estimator.max_dca_iter)}
    if estimator.history_:
        return {"after_step": int(estimator.n_iter_), "max_iter": int(estimator.max_iter)}
    steps, trial_iter = step_trials(estimator)
    return {"during": "step trials", "trials_run": len(estimator.step_trials_), "trials": len(steps),
            "kept_step": float(estimator.step_), "after_step": int(estimator.n_iter_), "trial_steps": trial_iter}


def provenance(estimator: Any, data: Any, label_column: str | None, selection: dict[str, Any] | None,
               interrupted: dict[str, Any] | None) -> dict[str, Any]:
    """What the summary and the model's metadata record of the data and the fit (its metrics,
    which take a pass over the data, are added by :func:`metrics`). ``label_column``: a CSV's."""
    facts = {"source": data.name, "train_rows": len(data.X_train), "test_rows": len(data.X_test),
             "features": int(data.X_train.shape[1]), "classes": len(estimator.classes_)}
    if data.image_shape is not None:  # lets `inspect --atoms` draw the atoms as these images
        facts["image_shape"] = [int(n) for n in data.image_shape]
    if label_column is not None:  # export --calibration reads the same column by default
        facts["label_column"] = label_column
    summary: dict[str, Any] = {"data": facts, "metrics": None}
    if selection is not None:
        summary["selection"] = selection
    if interrupted is not None:
        summary["interrupted"] = interrupted
    return summary


def metrics(estimator: Any, data: Any) -> dict[str, Any]:
    """Accuracies and fit time; sparsity on the test rows (training rows when there is no test part)."""
    rows = data.X_test if data.has_test else data.X_train
    return {"train_accuracy": round(float(estimator.score(data.X_train, data.y_train)), 5),
            "test_accuracy": (round(float(estimator.score(data.X_test, data.y_test)), 5)
                              if data.has_test else None),
            "fit_seconds": round(estimator.fit_time_, 3),
            "feature_sparsity": round(estimator.feature_sparsity(rows), 5)}


def summary_fields(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary's ``(label, text)`` lines, for ``inspect.field_lines``."""
    from .budget import budget_fields
    from .inspect import grid_stop_text, selection_text

    data, metrics, model = summary["data"], summary["metrics"], summary["model"]
    test = metrics["test_accuracy"]
    sparsity_rows = "test" if test is not None else "train"
    fields = [
        ("data", f"{data['source']}: {data['train_rows']} train / {data['test_rows']} test rows, "
                 f"{data['features']} features, {data['classes']} classes"),
        ("train accuracy", f"{metrics['train_accuracy']:.2%}"),
        ("test accuracy", "no test part" if test is None else f"{test:.2%}"),
        ("training time", f"{metrics['fit_seconds']:.1f} s"),
        ("feature sparsity", f"{metrics['feature_sparsity']:.1%} zeros on {sparsity_rows} rows"),
        ("preprocessing", model["preprocess"] + (" (chosen by --preprocess auto)" if model["preprocess_chosen"] else "")),
        *([("weight decay", mu_text(model))] if "mu" in model else []),
        ("model", f"{model['path']}: {model['atoms']} atoms, {model['macs_per_sample']:,} MACs/sample, "
                  f"{model['size_bytes'] / 1024:.1f} KiB"),
    ]
    selection = summary.get("selection")
    if selection is not None:
        fields += (budget_fields(selection) if "budget" in selection
                   else [("hold-out choice", selection_text(selection))])
        stopped = grid_stop_text(selection)
        if stopped is not None:
            fields.append(("hold-out grid", stopped))
    scored = [row for row in summary["curve"] if "validation_accuracy" in row]
    if scored:
        best = max(scored, key=lambda row: row["validation_accuracy"])
        kept = f"kept DCA iteration {best['iteration']} of {len(summary['curve'])}"
        fields.append(("hold-out accuracy", f"{best['validation_accuracy']:.2%}, {kept}"))
    if "figure" in summary:
        fields.append(("training curve", summary["figure"]))
    if "interrupted" in summary:
        fields.append(("interrupted", interrupted_text(summary["interrupted"])))
    return fields


def mu_text(model: dict[str, Any]) -> str:
    """LAST's weight decay: with ``mu="auto"`` per unit of the rows' mean squared norm, and the
    hold-out scores of its candidates when it chose."""
    text = f"mu {model['mu']:.3g}"
    factor, choice = model.get("mu_factor"), model.get("mu_choice")
    if choice:
        scores = ", ".join(f"{candidate} -> {score:.2%}" for candidate, score in choice.items())
        text += (f" (default: {factor:g} x the rows' mean squared norm, the better on 20% of the training "
                 f"rows held out: {scores})")
    elif factor is not None:
        text += f" ({factor:g} x the rows' mean squared norm)"
    return text


def interrupted_text(stopped: dict[str, Any]) -> str:
    """The summary line of a fit Ctrl-C stopped: LAST's, SGD's final run or SGD's step trials."""
    if "after_dca_iteration" in stopped:
        where = f"stopped after DCA iteration {stopped['after_dca_iteration']} of at most {stopped['max_dca_iter']}"
    elif "during" in stopped:
        where = (f"stopped the step-size trials ({stopped['trials_run']} of {stopped['trials']} run) and kept "
                 f"the trial run of step {stopped['kept_step']:g}, {stopped['after_step']:,} of "
                 f"{stopped['trial_steps']:,} steps on the rows not held out")
    else:
        where = f"stopped after step {stopped['after_step']:,} of {stopped['max_iter']:,}"
    return f"Ctrl-C: {where}; the model so far is saved"
