"""``lastedge train --budget-macs/--budget-flash/--budget-latency-us``: the atom count and
multiclass form most accurate on a hold-out of the training rows among those within a device
budget, as :class:`lastedge.train.LASTBudgetSearch` chooses them; with ``--auto`` or a ``--mu``
grid, then the preprocessing and ``mu`` for that shape on the same hold-out (its ``settings``).
The final fit on all rows is the train command's own. The summary names the best model over the
budget and how far over it is."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

from .holdout import SELECTION_HOLDOUT, StopOnInterrupt, cluster_backend, search_jobs

MAX_BENCH_JSON = 1 << 24  # bytes: bench --json of thousands of files is far less


def add_budget_options(p: argparse.ArgumentParser) -> None:
    """The budget options of ``train``."""
    p.add_argument("--budget-macs", type=float, default=None, metavar="M",
                   help="LAST: choose --atoms and --multiclass: the model most accurate on 10%% of the "
                        "training rows among those of at most M MACs per prediction, refitted on all rows")
    p.add_argument("--budget-flash", type=float, default=None, metavar="BYTES",
                   help="the same, for models of at most BYTES of weights in --budget-format")
    p.add_argument("--budget-latency-us", type=float, default=None, metavar="U",
                   help="the same, for models predicted to take at most U microseconds per row on the "
                        "target that --bench-json timed")
    p.add_argument("--budget-format", choices=("int8", "fp32"), default="int8",
                   help="the precision the model will be exported in: what --budget-flash counts and "
                        "which --bench-json rows the latency model is fitted on (default int8)")
    p.add_argument("--bench-json", default=None, metavar="PATH",
                   help="`lastedge bench --json` output of two or more models of different sizes on the "
                        "target: its latency against MACs, for --budget-latency-us")


def budget_given(args: argparse.Namespace) -> bool:
    """Whether the command line sets a device budget."""
    return any(v is not None for v in (args.budget_macs, args.budget_flash, args.budget_latency_us))


def check_budget_options(args: argparse.Namespace) -> None:
    """ValueError for budget options that do not go together with the rest."""
    if not budget_given(args):
        if args.bench_json is not None:
            raise ValueError("--bench-json applies to a budget (--budget-latency-us, --budget-macs, --budget-flash)")
        if args.atoms is None:
            raise ValueError("--atoms is required, unless a budget (--budget-macs, --budget-flash, "
                             "--budget-latency-us) chooses it")
        return
    for option in ("--budget-macs", "--budget-flash", "--budget-latency-us"):
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"{option} must be a positive number, got {value:g}")
    if args.atoms is not None:
        raise ValueError("--atoms and a budget exclude each other: the budget chooses the atoms")
    if args.method != "last":
        raise ValueError("budgets apply to --method last only")
    if args.budget_latency_us is not None and args.bench_json is None:
        raise ValueError("--budget-latency-us needs --bench-json: `lastedge bench --json` figures of the target")


def choose_budget(estimator: Any, args: argparse.Namespace, data: Any) -> dict[str, Any] | None:
    """The hold-out choice within the budget, as a selection record (``"chosen"``, ``"budget"``,
    ``"candidates"``, ``"runner_up"``; with ``--auto`` or a ``--mu`` grid, ``"settings"``, their
    choice for the shape chosen); None when a second Ctrl-C stopped it before any refit."""
    from sklearn.exceptions import ConvergenceWarning

    from lastedge.train import LASTBudgetSearch

    from .auto import auto_grid

    time_budget = args.time_budget
    if time_budget is not None and not time_budget > 0:
        raise ValueError(f"--time-budget must be positive seconds, got {args.time_budget}")
    shared = {k: v for k, v in estimator.get_params().items() if k not in ("n_atoms", "multiclass", "random_state")}
    settings = auto_grid(args) if args.auto else {"mu": args.mu} if len(args.mu or ()) > 1 else None
    search = LASTBudgetSearch(
        max_macs=args.budget_macs, max_flash_bytes=args.budget_flash, max_latency_us=args.budget_latency_us,
        flash_format=args.budget_format, latency_model=_latency_model(args.bench_json, args.budget_format),
        multiclass=[args.multiclass] if args.multiclass else ["ovr", "shared"], holdout_fraction=SELECTION_HOLDOUT,
        time_budget=time_budget, settings=settings, refit=False, estimator_params=shared, random_state=args.seed,
        n_jobs=search_jobs(args.jobs, args.cluster), verbose=estimator.verbose)
    search.candidates(data.X_train.shape[1], len(set(data.y_train.tolist())))  # a budget nothing fits: now
    grid_stop = StopOnInterrupt("stopping the search after this candidate fit, then fitting the best so far "
                                "on all rows", estimator.verbose)
    try:
        with grid_stop.installed(), cluster_backend(args.cluster), warnings.catch_warnings(), \
                contextlib.redirect_stdout(sys.stderr):  # progress, not output
            warnings.simplefilter("ignore", ConvergenceWarning)  # the final fit reports its own
            search.fit(data.X_train, data.y_train, monitor=grid_stop)
    except KeyboardInterrupt:
        print("lastedge train: interrupted during the budget search: nothing trained", file=sys.stderr)
        return None
    return _record(search, time_budget, grid_stop.requested)


def _latency_model(path: str | None, precision: str) -> Any:
    """The latency model fitted on ``--bench-json``'s rows of ``precision``; None without one."""
    from lastedge.train import LatencyModel

    if path is None:
        return None
    file = Path(path)
    if file.stat().st_size > MAX_BENCH_JSON:
        raise ValueError(f"--bench-json {path}: larger than {MAX_BENCH_JSON >> 20} MiB, no bench output")
    try:
        rows = json.loads(file.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"--bench-json {path}: not JSON ({err})") from None
    try:
        return LatencyModel.from_bench(rows, precision=precision)
    except ValueError as err:
        raise ValueError(f"--bench-json {path}: {err}") from None


def _record(search: Any, time_budget: float | None, interrupted: bool) -> dict[str, Any]:
    """The search as the summary and the model's metadata record it (JSON-ready): ``"chosen"``
    holds every setting chosen, the shape's and (under ``"settings"``) the preprocessing's and mu's."""
    budget = search.budget()
    latency = budget.latency_model
    record = {"chosen": dict(search.best_params_), "holdout_fraction": SELECTION_HOLDOUT,
              "budget": {"macs": budget.macs, "flash_bytes": budget.flash_bytes, "latency_us": budget.latency_us,
                         "flash_format": budget.flash_format,
                         "latency_model": None if latency is None else {
                             "intercept_us": latency.intercept_us, "us_per_mac": latency.us_per_mac,
                             "source": latency.source}},
              **_scored(search.cv_results_, ("n_atoms", "multiclass"), interrupted),
              "runner_up": search.runner_up_, "time_budget_s": time_budget}
    if search.settings_results_:
        names = [name for name in search.settings_results_[0] if name != "holdout_accuracy"]
        record["settings"] = {"chosen": {name: search.best_params_[name] for name in names},
                              "holdout_fraction": SELECTION_HOLDOUT,
                              **_scored(search.settings_results_, names, interrupted)}
    return record


def _scored(rows: list[dict[str, Any]], names: Any, interrupted: bool) -> dict[str, Any]:
    """``{"candidates": the rows scored}``, and those not fitted by their ``names``, as
    ``"skipped"`` (Ctrl-C) or ``"not_fitted"`` (the time budget)."""
    record: dict[str, Any] = {"candidates": [row for row in rows if row["holdout_accuracy"] is not None]}
    unfitted = [{name: row[name] for name in names} for row in rows if row["holdout_accuracy"] is None]
    if unfitted:
        record["skipped" if interrupted else "not_fitted"] = unfitted
    return record


def budget_fields(selection: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary's (and ``inspect``'s) lines of a budget search record; one line saying so for a
    record this version cannot read (an older or hand-edited file)."""
    try:
        return _budget_fields(selection)
    except (KeyError, TypeError, ValueError, AttributeError, StopIteration):
        return [("budget choice", "recorded, in a form this version cannot read")]


def _budget_fields(selection: dict[str, Any]) -> list[tuple[str, str]]:
    budget, chosen = selection["budget"], selection["chosen"]
    best = next(row for row in selection["candidates"]
                if all(row[k] == chosen[k] for k in ("n_atoms", "multiclass")))
    within = sum(row["fits"] for row in selection["candidates"])
    fields = [("budget", _limits_text(budget)),
              ("budget choice", f"{_model_text(best, budget)}; held-out {best['holdout_accuracy']:.2%} on "
                                f"{selection['holdout_fraction']:.0%} of the training rows, the best of "
                                f"{within} scored within the budget")]
    runner_up = selection.get("runner_up")
    if runner_up is None:
        fields.append(("over the budget", "none tried: the largest size searched fits"))
    else:
        over = ", ".join(f"{ratio:.2f}x the {_LABELS[name]} budget" for name, ratio in runner_up["exceeds"].items())
        gain = None if runner_up["holdout_accuracy"] is None else runner_up["holdout_accuracy"] - best["holdout_accuracy"]
        accuracy = ("not fitted (time budget)" if gain is None
                    else f"held-out {runner_up['holdout_accuracy']:.2%} ({100 * gain:+.2f} points)")
        fields.append(("over the budget", f"{_model_text(runner_up, budget)}; {accuracy}; {over}"))
    if selection.get("not_fitted"):
        fitted = len(selection["candidates"])
        fields.append(("time budget", f"spent after {fitted} candidate{'s' if fitted > 1 else ''}; not fitted: "
                                      + ", ".join(_atoms_text(row) for row in selection["not_fitted"])))
    if "settings" in selection:
        fields += _settings_fields(selection["settings"])
    return fields


def _settings_fields(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """The lines of the settings chosen for the budget's shape (``--auto`` or a ``--mu`` grid)."""
    from .inspect import grid_stop_text, selection_text

    fields = [("settings choice", selection_text(settings) or "recorded, in a form this version cannot read")]
    for key in ("skipped", "not_fitted"):
        stopped = grid_stop_text(settings, key)
        if stopped is not None:
            fields.append(("settings grid", stopped))
    return fields


_LABELS = {"macs": "MACs", "flash_bytes": "flash", "latency_us": "latency"}


def _limits_text(budget: dict[str, Any]) -> str:
    """``"20,000 MACs, 16.0 KiB int8 flash, 50 us"``, with the latency model's source."""
    parts = [f"{budget['macs']:,.0f} MACs" if budget["macs"] is not None else None,
             f"{budget['flash_bytes'] / 1024:,.1f} KiB {budget['flash_format']} flash"
             if budget["flash_bytes"] is not None else None,
             f"{budget['latency_us']:g} us" if budget["latency_us"] is not None else None]
    text = ", ".join(part for part in parts if part)
    model = budget.get("latency_model")
    if model:
        text += (f" (latency {model['intercept_us']:.3g} us + {model['us_per_mac'] * 1e3:.3g} ns per MAC, "
                 f"from {model['source']})")
    return text


def _model_text(row: dict[str, Any], budget: dict[str, Any]) -> str:
    """``"shared with 40 atoms: 2,960 MACs, 3.0 KiB int8, ~25.1 us"``."""
    latency = "" if row.get("latency_us") is None else f", ~{row['latency_us']:.3g} us"
    return (f"{_atoms_text(row)}: {row['macs']:,} MACs, {row['flash_bytes'] / 1024:.1f} KiB "
            f"{budget['flash_format']}{latency}")


def _atoms_text(row: dict[str, Any]) -> str:
    from lastedge.train.device_cost import describe_atoms

    return f"{row['multiclass']} with {describe_atoms(row)}"
