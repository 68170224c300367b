"""Every warning of the package points at the user's line, not at fairpca's internals."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import fairpca
from fairpca import ConvexFairPCA, MinMaxLossFairPCA, MMDFairPCA, ParetoFairPCA, RobustFairPCA
from fairpca.datasets import make_gaussian_groups

X, S = make_gaussian_groups(n_samples=200, n_features=5, random_state=0)


def _fit_and_catch(fit, category):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()  # the line the warning must point at
    hits = [w for w in caught if issubclass(w.category, category)]
    assert hits, [str(w.message) for w in caught]
    return hits


# FairPLS (supervised: fit needs y) has these checks in tests/test_fair_pls.py.
@pytest.mark.parametrize("cls", fairpca.all_estimators(supervised=False), ids=lambda c: c.__name__)
def test_group_blind_warning_points_at_the_caller(cls):
    est = cls()
    for w in _fit_and_catch(lambda: est.fit(X), fairpca.GroupBlindFitWarning):
        assert w.filename == __file__, (w.filename, str(w.message))


@pytest.mark.parametrize(
    "est",
    [
        MinMaxLossFairPCA(n_components=2, solver="mw", max_iter=1),
        ConvexFairPCA(n_components=2, max_iter=5),
        ParetoFairPCA(n_components=2, max_iter=1, group_loss="summed"),
        MMDFairPCA(n_components=2, max_iter=1, tau=1e-9, random_state=0),
        RobustFairPCA(n_components=2, n_iter=5, n_restarts=2, random_state=0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_convergence_warning_points_at_the_caller(est):
    for w in _fit_and_catch(lambda: est.fit(X, sensitive_features=S), ConvergenceWarning):
        assert w.filename == __file__, (w.filename, str(w.message))
    assert est.converged_ is False or np.all(est.converged_ == False)  # noqa: E712


def test_quadratic_erasure_convergence_warning_points_at_the_caller():
    est = fairpca.QuadraticErasure(max_iter=1, tol=1e-15)
    for w in _fit_and_catch(lambda: est.fit(X, sensitive_features=S), ConvergenceWarning):
        assert w.filename == __file__, (w.filename, str(w.message))
    assert est.n_barycenter_iter_ == 1


def test_partial_fit_warning_points_at_the_caller():
    est = RobustFairPCA(n_components=2)
    for w in _fit_and_catch(
        lambda: est.partial_fit(X[S == S[0]], sensitive_features=S[S == S[0]]), UserWarning
    ):
        assert w.filename == __file__


@pytest.mark.parametrize(
    "est",
    [
        fairpca.MMDFairPCA(n_components=2, max_iter=2, verbose=1, random_state=0),
        fairpca.MinMaxLossFairPCA(n_components=2, verbose=1),
        fairpca.RobustFairPCA(n_components=2, n_iter=5, n_restarts=1, verbose=1),
        fairpca.ConvexFairPCA(n_components=2, verbose=1),
        fairpca.ParetoFairPCA(n_components=2, verbose=1),
    ],
    ids=lambda e: type(e).__name__,
)
def test_verbose_prints_progress_without_logging_set_up(est, capsys, monkeypatch):
    import logging

    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # as in a fresh interpreter
    X, s = make_gaussian_groups(n_samples=200, n_features=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, sensitive_features=s)
    printed = capsys.readouterr().err
    assert printed.strip(), "nothing printed"
    assert logging.getLogger("fairpca").handlers == []  # the handler lived only during fit
    quiet = type(est)(**{**est.get_params(), "verbose": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet.fit(X, sensitive_features=s)
    assert capsys.readouterr().err == ""
