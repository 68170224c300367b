"""The one fitting loop: fit methods on a split, each failure an outcome rather than an error.

:func:`fit_methods` fits a dict of unfitted estimators on a split's training
part, with an optional time budget (each fit then runs in a child process that
is stopped when the budget runs out) and an optional progress callback, and
returns a :class:`FitOutcome` per method: the fitted estimator, its seconds,
or why it failed, was stopped or could not run. :func:`fit_method` fits one.
``fairpca.compare``, ``fairpca.tradeoff`` and the reproduction engine
(``fairpca.experiments._engine``) all fit through it.

One rule tells a fair method from a group-blind one (:func:`takes_groups`): the
estimator registry's ``fair`` capability (:func:`fairpca.all_estimators`); a
fair method is fitted with the groups (and the target), anything else (PCA,
the group-blind reference) on ``X`` alone.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
import time
import warnings
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.utils import get_tags

from fairpca._base import FairPCABase, package_log_handler
from fairpca._registry import all_estimators
from fairpca._validation import DataTooWideError

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

    from fairpca._split import Split

__all__ = [
    "FitOutcome",
    "as_input_for",
    "check_time_budget",
    "failure_reason",
    "fit_estimator",
    "fit_method",
    "fit_methods",
    "takes_groups",
]

#: The classes fitted with the groups: the registry's fair estimators and the base
#: class of the moment-based ones (whose subclasses share its capabilities).
_FAIR_CLASSES = (FairPCABase, *all_estimators(fair=True))


def takes_groups(estimator: BaseEstimator) -> bool:
    """Whether ``estimator`` is a fair method, fitted with the groups (the registry's rule).

    True for every estimator the registry lists as ``fair``
    (:func:`fairpca.estimator_capabilities`) and their subclasses; False for
    anything else, e.g. scikit-learn's group-blind ``PCA``, the reference.
    """
    return isinstance(estimator, _FAIR_CLASSES)


def as_input_for(estimator: BaseEstimator, X: ArrayLike) -> ArrayLike:
    """``X``, densified only if it is sparse and ``estimator``'s tags refuse sparse input."""
    if sparse.issparse(X) and not get_tags(estimator).input_tags.sparse:
        return X.toarray()
    return X


def fit_estimator(estimator, X, s, y=None):
    """Fit ``estimator``: a fair method with the groups and target, any other on ``X`` alone.

    Sparse ``X`` is densified only for an estimator whose scikit-learn tags
    say it does not take sparse input (one that reads every row).
    """
    X = as_input_for(estimator, X)
    if not takes_groups(estimator):
        return estimator.fit(X)
    return estimator.fit(X, y, sensitive_features=s)


class _LogLines(logging.Handler):
    """Pass each INFO line of the ``fairpca.*`` loggers (solver progress) to ``callback``."""

    def __init__(self, callback):
        super().__init__(logging.INFO)
        self.callback = callback

    def emit(self, record):
        self.callback(record.getMessage())


def _fit_in_child(connection, estimator, X, s, y):
    """Child-process body: fit, then send back the estimator and its warnings (or the error)."""
    with (
        warnings.catch_warnings(record=True) as caught,
        package_log_handler(_LogLines(lambda line: connection.send(("progress", line, [])))),
    ):
        warnings.simplefilter("always")
        try:
            result = ("ok", fit_estimator(estimator, X, s, y))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the parent
            result = ("error", exc)
    connection.send((*result, [(w.category, str(w.message)) for w in caught]))
    connection.close()


def _fit_with_budget(estimator, X, s, y, budget, progress=None):
    """The fitted estimator, or None when the fit did not end within ``budget`` seconds.

    The fit runs in a child process (forked where the platform allows, so that
    classes defined at run time pickle), which is terminated at the budget.
    The solvers' progress lines are passed to ``progress`` as they arrive;
    warnings raised in the child are re-issued here; an exception is re-raised.
    """
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_fit_in_child, args=(sender, estimator, X, s, y), daemon=True)
    child.start()
    sender.close()
    deadline = time.monotonic() + budget
    try:
        while True:
            if not receiver.poll(max(deadline - time.monotonic(), 0.0)):
                return None
            status, value, caught = receiver.recv()
            if status != "progress":
                break
            if progress is not None:
                progress(value)
    except EOFError:  # the child died without answering (killed, out of memory)
        raise RuntimeError(f"the child process fitting {type(estimator).__name__} died") from None
    finally:
        if child.is_alive():
            child.terminate()
        child.join()
        receiver.close()
    for category, message in caught:
        warnings.warn(message, category, stacklevel=3)
    if status == "error":
        raise value
    return value


def check_time_budget(time_budget: float | None) -> float | None:
    """``time_budget`` as a positive number of seconds, or None (no limit)."""
    if time_budget is None:
        return None
    if isinstance(time_budget, bool) or not isinstance(time_budget, int | float):
        raise TypeError(f"time_budget must be a number of seconds or None, got {time_budget!r}.")
    if not np.isfinite(time_budget) or time_budget <= 0:
        raise ValueError(f"time_budget must be a positive number of seconds, got {time_budget}.")
    return float(time_budget)


#: Longest reason kept for a failed method (its exception's first line).
_MAX_REASON = 300


def failure_reason(exc: BaseException) -> str:
    """One line saying why a fit failed: the exception's type and first line."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else 'no message'}"
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


@dataclass
class FitOutcome:
    """How the fit of one method ended.

    Attributes
    ----------
    status : {"fitted", "failed", "stopped", "unavailable"}
        Fitted; raised (``reason`` says why); stopped at the time budget; or
        could not run here (a missing optional dependency, data too wide for
        its dense moments).
    estimator : estimator or None
        The fitted estimator when ``status == "fitted"``.
    reason : str
        One line: why it is not fitted ("" when it is).
    seconds : float
        Wall-clock seconds the fit took (also when it failed).
    cpu_seconds : float
        CPU seconds of this process during the fit, every thread counted (NaN
        when the fit ran in a child process under a time budget).
    error : BaseException or None
        The exception a ``"failed"`` or ``"unavailable"`` fit raised (for a
        caller that re-raises it, as the reproductions do).
    """

    status: Literal["fitted", "failed", "stopped", "unavailable"]
    estimator: Any = None
    reason: str = ""
    seconds: float = float("nan")
    cpu_seconds: float = float("nan")
    error: BaseException | None = None


def fit_method(
    estimator: BaseEstimator,
    split: Split,
    *,
    time_budget: float | None = None,
    progress: Callable[[str], object] | None = None,
    label: str = "",
) -> FitOutcome:
    """Fit one method on a split's training part; a failure is an outcome, not an error.

    A fair method (:func:`takes_groups`) is fitted with the training groups
    (and target), any other on ``X`` alone (PCA). Any exception (a solver
    failure, refused input, memory) is caught and recorded as ``"failed"``
    with its one-line reason; a missing optional dependency or data too wide
    for dense moments as ``"unavailable"``; a fit past ``time_budget``
    seconds (run in a child process) as ``"stopped"``. ``progress`` receives
    the solvers' own progress lines during the fit, prefixed with ``label``.
    ``KeyboardInterrupt`` is not caught.
    """
    start, cpu_start = time.perf_counter(), time.process_time()
    # A paper's protocol may hand a namespace without a target.
    args = (estimator, split.X_train, split.s_train, getattr(split, "y_train", None))

    def outcome(status, **kwargs):
        cpu = time.process_time() - cpu_start if time_budget is None else float("nan")
        return FitOutcome(status, seconds=time.perf_counter() - start, cpu_seconds=cpu, **kwargs)

    forward = None if progress is None else (lambda line: progress(f"{label} {line}"))
    try:
        if time_budget is not None:
            fitted = _fit_with_budget(*args, time_budget, forward)
        elif forward is None:
            fitted = fit_estimator(*args)
        else:
            with package_log_handler(_LogLines(forward)):
                fitted = fit_estimator(*args)
    except (ImportError, DataTooWideError) as exc:
        return outcome("unavailable", reason=str(exc), error=exc)
    except Exception as exc:  # noqa: BLE001 - one method's failure never ends the comparison
        return outcome("failed", reason=failure_reason(exc), error=exc)
    if fitted is None:
        return outcome("stopped", reason=f"stopped at the time budget of {time_budget:g} s")
    return outcome("fitted", estimator=fitted)


def _ending(outcome):
    """The progress line's end for a finished fit."""
    if outcome.status == "fitted":
        cpu = "" if np.isnan(outcome.cpu_seconds) else f" ({outcome.cpu_seconds:.2f} s CPU)"
        return f"done in {outcome.seconds:.2f} s{cpu}"
    if outcome.status == "failed":
        return f"FAILED after {outcome.seconds:.2f} s ({outcome.reason})"
    if outcome.status == "stopped":
        return outcome.reason
    return f"not available ({outcome.reason})"


def fit_methods(
    estimators: Mapping[Hashable, BaseEstimator],
    split: Split,
    *,
    time_budget: float | None = None,
    progress: Callable[[str], object] | None = None,
    suffix: str = "",
) -> dict[Hashable, FitOutcome]:
    """Fit every estimator on the split's training part, one after the other.

    Parameters
    ----------
    estimators : dict
        Name -> unfitted estimator (fitted in place, in this order).
    split : fairpca.datasets.Split
        Its ``X_train``, ``s_train`` and ``y_train`` (None when absent) are used.
    time_budget : float or None, default=None
        Seconds each fit may take; past it the fit is stopped (it runs in a
        child process) and its outcome is ``"stopped"``.
    progress : callable or None, default=None
        Called with ``"[i/n] name<suffix> fitting ..."`` before each fit, with
        the solvers' own progress lines during it, and with how it ended
        (seconds, or why it failed, stopped or could not run) after it.
    suffix : str, default=""
        Appended to each method's name in the progress lines (e.g. ``" (d = 3)"``).

    Returns
    -------
    outcomes : dict
        Name -> :class:`FitOutcome`, in the order of ``estimators``.
    """
    outcomes = {}
    for i, (name, estimator) in enumerate(estimators.items(), start=1):
        step = f"[{i}/{len(estimators)}] {name}{suffix}"
        if progress is not None:
            progress(f"{step} fitting ...")
        outcome = fit_method(
            estimator, split, time_budget=time_budget, progress=progress, label=step
        )
        outcomes[name] = outcome
        if progress is not None:
            progress(f"{step} {_ending(outcome)}")
    return outcomes
