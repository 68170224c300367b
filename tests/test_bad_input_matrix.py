"""An adversarial input matrix: every estimator x entry point x bad input, tabulated.

Each case must end in one of two ways: a clear ``ValueError`` or ``TypeError``
(``NotFittedError`` before a fit) whose message names the offending argument,
or a finite result of the right shape. The test tabulates the outcomes and
fails on any silent non-finite output, wrong shape, other exception type or
unhelpful message (printed with ``pytest -s``).
"""

import collections
import inspect
import warnings

import numpy as np
from sklearn.exceptions import NotFittedError

import fairpca
from fairpca.datasets import make_gaussian_groups
from transform_groups import fit_kwargs

X, S = make_gaussian_groups(n_samples=120, n_features=4, random_state=0)


def _estimators():
    fast = {
        fairpca.MMDFairPCA: {"max_iter": 3, "random_state": 0},
        fairpca.RobustFairPCA: {"n_iter": 10, "n_restarts": 1, "random_state": 0},
        fairpca.FairKernelPCA: {"random_state": 0},
        fairpca.StreamingFairPCA: {"unfair_rank": 1, "random_state": 0},
    }
    classes = fairpca.all_estimators()
    return {cls.__name__: (cls, fast.get(cls, {})) for cls in classes}


def _with(index, value, base=X):
    out = base.astype(object if isinstance(value, str) else float).copy()
    out[index] = value
    return out


#: (name, X, sensitive_features, words one of which the message must contain)
BAD_DATA = [
    ("NaN in X", _with((3, 1), np.nan), S, ["NaN"]),
    ("inf in X", _with((3, 1), np.inf), S, ["infinity", "inf"]),
    ("-inf in X", _with((5, 0), -np.inf), S, ["infinity", "inf"]),
    ("string in X", _with((2, 2), "a"), S, ["X"]),
    ("complex X", X + 1j, S, ["complex"]),
    ("empty X", X[:0], S[:0], ["0 sample", "empty", "X"]),
    ("one row", X[:1], S[:1], ["sample", "row", "group"]),
    ("no columns", X[:, :0], S, ["feature", "0"]),
    ("3-D X", X[:, :, None], S, ["dim", "2D", "3"]),
    ("1-D X", X[:, 0], S, ["2D", "1D", "reshape"]),
    ("huge X", X * 1e300, S, ["large", "overflow", "infinity"]),
    ("tiny X", X * 1e-300, S, ["small"]),
    ("constant X", np.ones_like(X), S, ["variance", "zero", "constant", "same", "duplicate"]),
    ("NaN label", X, np.where(np.arange(120) == 4, np.nan, S), ["NaN", "missing"]),
    ("None label", X, np.where(np.arange(120) == 4, None, S), ["missing", "None"]),
    ("one group", X, np.zeros(120), ["2 distinct groups", "two groups", "at least"]),
    ("short labels", X, S[:100], ["length", "rows", "same"]),
    ("mixed labels", X, np.array([1, "a"] * 60, dtype=object), ["mix", "type"]),
    ("one-row group", X, np.where(np.arange(120) == 0, 7, S), ["rows", "too small", "7"]),
    ("complex labels", X, S + 0j, ["complex"]),
]
BAD_PARAMS = [
    ("n_components=0", {"n_components": 0}, ["n_components"]),
    ("n_components=p+1", {"n_components": 5}, ["n_components"]),
    ("n_components='2'", {"n_components": "2"}, ["n_components"]),
    ("n_components=True", {"n_components": True}, ["n_components"]),
    ("n_components=1.5", {"n_components": 1.5}, ["n_components"]),
]


def _outcome(call, words, expected_shape=None):
    """'error' (clear), 'handled' (finite result) or a description of the problem."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except (ValueError, TypeError, NotFittedError) as exc:
        message = str(exc)
        if not any(word.lower() in message.lower() for word in words):
            return f"unclear {type(exc).__name__}: {message[:120]}"
        return "error"
    except Exception as exc:  # noqa: BLE001 - what the test is about
        return f"obscure {type(exc).__name__}: {str(exc)[:120]}"
    if isinstance(result, np.ndarray):
        if not np.all(np.isfinite(result)):
            return "non-finite output"
        if expected_shape is not None and result.shape != expected_shape:
            return f"wrong shape {result.shape}"
    return "handled"


#: Cases where a finite result is right: a chunk of one group (or with a one-row
#: group, of one row, or of equal rows) is merged and the fit waits for more
#: chunks (with a warning); LEACE needs only one row per group (a group mean);
#: kernel PCA may return more components than X has features.
ACCEPTED = {
    ("partial_fit", "one group"),
    ("partial_fit", "one-row group"),
    ("partial_fit", "one row"),
    ("partial_fit", "constant X"),
    ("LinearErasure.fit", "one-row group"),
    ("FairKernelPCA.fit", "n_components=p+1"),
}
BAD_WEIGHTS = [
    ("negative weight", -np.ones(120), ["non-negative", "sample_weight"]),
    ("NaN weight", np.full(120, np.nan), ["NaN", "sample_weight"]),
    ("short weights", np.ones(100), ["one weight per row", "sample_weight"]),
    ("zero weights", np.zeros(120), ["zero", "sample_weight"]),
]


def _cases():
    for name, (cls, params) in _estimators().items():
        has_components = "n_components" in cls().get_params()
        for index, (label, Xb, sb, words) in enumerate(BAD_DATA):
            yield name, "fit", label, cls, params, Xb, sb, words
            if hasattr(cls(), "partial_fit"):  # available_if: per instance
                yield name, "partial_fit", label, cls, params, Xb, sb, words
            if index < 13:  # the bad X inputs
                yield name, "transform", label, cls, params, Xb, sb, words + ["feature"]
        yield name, "transform", "other width", cls, params, X[:, :3], S, ["features"]
        if "sample_weight" in inspect.signature(cls.fit).parameters:
            for label, w, words in BAD_WEIGHTS:
                yield name, "fit", label, cls, {**params, "_sample_weight": w}, X, S, words
        if has_components:
            for label, bad, words in BAD_PARAMS:
                yield name, "fit", label, cls, {**params, **bad}, X, S, words
        if hasattr(cls, "inverse_transform"):
            yield name, "inverse_transform", "wrong width", cls, params, X, S, ["column"]
            yield name, "inverse_transform", "NaN", cls, params, X, S, ["NaN"]
        yield name, "transform", "before fit", cls, params, X, S, ["not fitted", "fit"]


def _target(cls, Xb):
    """A valid target for a supervised estimator (FairPLS), none for the others."""
    return fit_kwargs(cls, np.shape(Xb)[0] if np.ndim(Xb) else 0)


def _run(method, label, cls, params, Xb, sb):
    params = dict(params)
    weights = params.pop("_sample_weight", None)
    est = cls(**params)
    y = _target(cls, Xb)
    if method == "fit":
        if weights is not None:
            return lambda: est.fit(Xb, sensitive_features=sb, sample_weight=weights, **y)
        return lambda: est.fit(Xb, sensitive_features=sb, **y)
    if method == "partial_fit":
        return lambda: est.partial_fit(Xb, sensitive_features=sb, **y)
    if label == "before fit":
        return lambda: est.transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, sensitive_features=S, **_target(cls, X))
    if method == "transform":
        return lambda: est.transform(Xb)
    width = est.transform(X[:2]).shape[1]
    Z = np.ones((3, width + 1)) if label == "wrong width" else np.full((3, width), np.nan)
    return lambda: est.inverse_transform(Z)


def test_bad_input_matrix_has_only_clear_errors_and_finite_results():
    table = collections.Counter()
    problems = []
    for name, method, label, cls, params, Xb, sb, words in _cases():
        outcome = _outcome(_run(method, label, cls, params, Xb, sb), words)
        accepted = (method, label) in ACCEPTED or (f"{name}.{method}", label) in ACCEPTED
        if outcome == "handled" and method in ("fit", "partial_fit") and not accepted:
            outcome = "silently accepted"
        table[outcome if outcome in ("error", "handled") else "PROBLEM"] += 1
        if outcome not in ("error", "handled"):
            problems.append(f"{name}.{method} [{label}]: {outcome}")
    total = sum(table.values())
    print(f"\n{total} cases: {dict(table)}")
    assert total >= 450
    assert not problems, "\n".join(problems)
