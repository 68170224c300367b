"""Vu et al. (2022): the protocol against an independent rebuild, ABDiff and ARE, CV, radius."""

import warnings

import numpy as np
import pytest
from experiments_support import (
    assert_train_standardised,
    claims_details,
    data_dir,
    quick_run_fixture,  # noqa: F401 (fixture quick_run)
    standardise,
)
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import fairpca
from fairpca import RobustFairPCA, experiments
from fairpca.datasets import make_gaussian_groups
from fairpca.experiments import robust_fair_pca_cv, vu2022
from fairpca.experiments._engine import setting_value

# dataset -> features after dropping SD <= 1e-5 columns (their table 2 except the two noted)
VU_FEATURES = {
    "default_credit": 22,
    "biodeg": 40,
    "ecoli": 7,
    "energy": 8,
    "german_credit": 48,
    "image_segmentation": 18,
    "letter": 16,
    "magic": 10,
    "parkinsons": 20,
    "skillcraft": 18,  # table 2: 17
    "statlog": 36,
    "steel": 24,  # table 2: 24 (perimX, perimY dropped as the authors' loader does)
    "taiwan_credit": 22,
    "wine_quality": 11,
}
VU_ROWS = {
    "default_credit": 30000,
    "biodeg": 1055,
    "ecoli": 333,
    "energy": 768,
    "german_credit": 1000,
    "image_segmentation": 660,
    "letter": 20000,
    "magic": 19020,
    "parkinsons": 5875,
    "skillcraft": 3338,
    "statlog": 3071,
    "steel": 1941,
    "taiwan_credit": 29623,
    "wine_quality": 6497,
}


@pytest.mark.parametrize("dataset", sorted(VU_FEATURES))
@pytest.mark.requires_data
def test_vu_shapes_and_stratified_30_70(dataset):
    result = vu2022(dataset, split=3)
    n = VU_ROWS[dataset]
    assert result.X_train.shape == (int(0.3 * n), VU_FEATURES[dataset])
    assert result.X_test.shape[0] == n - int(0.3 * n)
    s_all = np.r_[result.s_train, result.s_test]
    for group in np.unique(s_all):
        share = np.mean(result.s_train == group)
        assert share == pytest.approx(np.mean(s_all == group), abs=2 / result.X_train.shape[0])
    assert_train_standardised(result)
    has_label = dataset in {
        "default_credit",
        "biodeg",
        "energy",
        "german_credit",
        "taiwan_credit",
        "wine_quality",
    }
    assert (result.y_train is not None) == has_label


# Split 37 lies beyond the paper's ten: further splits follow the same rule, seeded by split.
@pytest.mark.parametrize(
    ("dataset", "dropped", "split"),
    [("ecoli", None, 5), ("german_credit", "A4_7", 5), ("ecoli", None, 37)],
)
@pytest.mark.requires_data
def test_vu_matches_an_independent_rebuild(dataset, dropped, split):
    file = {
        "ecoli": "ecoli/Ecoli_Data.csv",
        "german_credit": "german_credit/German_Credit_Data.csv",
    }
    path = data_dir() / file[dataset]
    header = path.read_text().split("\n", 1)[0].split(",")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y, s = raw[:, :-2], raw[:, -2], raw[:, -1]
    names = header[:-2]
    if dropped is not None:
        keep = [j for j, name in enumerate(names) if name != dropped]
        assert np.ptp(X[:, names.index(dropped)]) == 0
        X, names = X[:, keep], [names[j] for j in keep]
    result = vu2022(dataset, split=split)
    assert result.feature_names == names
    train, test = train_test_split(
        np.arange(len(s)), train_size=0.3, stratify=s, random_state=split
    )
    X_train, X_test = standardise(X[train], X[test])
    np.testing.assert_allclose(result.X_train, X_train, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.X_test, X_test, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(result.s_test, s[test])
    if result.y_train is not None:
        np.testing.assert_array_equal(result.y_train, y[train])


@pytest.mark.requires_data
def test_vu_default_credit_groups():
    result = vu2022("default_credit", split=0)
    s = np.r_[result.s_train, result.s_test]
    assert (s == "low").sum() == 5385 and (s == "high").sum() == 24615
    assert "EDUCATION" not in result.feature_names and "PAY_AMT6" in result.feature_names


@pytest.mark.slow
def test_radius_cells_are_the_brute_force_optimum(quick_run):
    from fairpca.datasets import make_robust_toy
    from fairpca.robust import robust_objective

    _, _, table, details = quick_run("vu2022-radius")
    assert sorted(details["setting"].map(setting_value).unique()) == [0, 2.5, 5, 7.5, 10]
    assert set(details["split"]) == {0, 1}
    # Simulation 0 by brute force over the direction angle of the 1-D subspace, with the
    # radii of appendix D.2.1 (eps_1 = alpha / sqrt(N_1); eps_0 fixed at 0.15 / sqrt(N_0)).
    X, s = make_robust_toy(random_state=0)
    X_test, s_test = make_robust_toy((8000, 4000), random_state=2022)
    centred = X - X.mean(0)
    moments = np.stack([centred[s == g].T @ centred[s == g] / np.sum(s == g) for g in (0, 1)])
    angles = np.linspace(0, np.pi, 3601)
    for alpha in (0.0, 10.0):
        radii = np.array([0.15 / np.sqrt(200), alpha / np.sqrt(100)])
        values = [
            robust_objective(
                np.array([[np.cos(a), np.sin(a)]]), moments, [2 / 3, 1 / 3], radii, 0.1
            )
            for a in angles
        ]
        v = np.array([np.cos(angles[np.argmin(values)]), np.sin(angles[np.argmin(values)])])

        def error(rows, centre, v=v):
            r = rows - centre
            return np.mean(np.sum((r - np.outer(r @ v, v)) ** 2, axis=1))

        are = error(X_test, X.mean(0))
        groups = [error(X_test[s_test == g], X[s == g].mean(0)) for g in (0, 1)]
        chosen = (details["split"] == 0) & (details["setting"] == f"alpha={alpha:g}")
        cell = details.loc[chosen, "value"].item()
        assert cell == pytest.approx(are + abs(groups[0] - groups[1]), rel=2e-3)
    means = details.groupby(details["setting"].map(setting_value))["value"].mean()
    measured = table.set_index("metric")["ours_mean"]
    assert measured["radius_improves"] == pytest.approx(means.iloc[1:].min() / means.iloc[0])
    assert measured["too_large_radius_hurts"] == pytest.approx(means.iloc[-1] / means.min())


def test_vu_errors_against_a_direct_computation():
    rng = np.random.default_rng(0)
    X_train, X = rng.normal(size=(40, 4)), rng.normal(size=(30, 4))
    s_train, s = np.repeat([0, 1], 20), np.repeat([0, 1], 15)
    q, _ = np.linalg.qr(rng.normal(size=(4, 2)))
    abdiff, are = experiments.vu2022_errors(X, s, q.T, X_train, s_train)
    projector = np.eye(4) - q @ q.T

    def err(rows, centre):
        return np.mean([np.linalg.norm(projector @ (x - centre)) ** 2 for x in rows])

    assert are == pytest.approx(err(X, X_train.mean(0)))
    errs = [err(X[s == g], X_train[s_train == g].mean(0)) for g in (0, 1)]
    assert abdiff == pytest.approx(abs(errs[0] - errs[1]))


def test_vu_errors_score_the_map_the_estimator_returns():
    # MinMaxLossFairPCA's exact rounding returns a third component of scale ~4e-6 here:
    # scoring it as a full dimension (the bug of the Table 1 job) would flatter it.
    X, s = make_gaussian_groups(n_samples=400, n_features=6, n_groups=3, random_state=0)
    X_train, X_test, s_train, s_test = X[:300], X[300:], s[:300], s[300:]
    est = fairpca.MinMaxLossFairPCA(n_components=2).fit(X_train, sensitive_features=s_train)
    assert est.components_.shape[0] == 3 and est.component_scales_.min() < 1e-4
    abdiff, are = experiments.vu2022_errors(X_test, s_test, est, X_train, s_train)
    # Directly: the reconstruction the estimator returns, moved to the authors' centres.
    P = est.components_.T @ np.diag(est.component_scales_) @ est.components_

    def err(rows, centre):
        return np.mean(np.sum(((rows - centre) - (rows - centre) @ P) ** 2, axis=1))

    assert are == pytest.approx(err(X_test, X_train.mean(0)), rel=1e-12)
    errs = [err(X_test[s_test == g], X_train[s_train == g].mean(0)) for g in np.unique(s)]
    assert abdiff == pytest.approx(max(errs) - min(errs), rel=1e-12)
    as_rows = experiments.vu2022_errors(X_test, s_test, est.components_, X_train, s_train)
    assert as_rows[1] < are  # counting the third row as a full dimension understates ARE


@pytest.mark.parametrize(
    "cls",
    fairpca.all_estimators(linear_projection=True, supervised=False),  # FairPLS needs y
    ids=lambda c: c.__name__,
)
def test_projection_helper_reproduces_inverse_transform(cls):
    from fairpca.metrics._projection import _resolve_projection

    X, s = make_gaussian_groups(n_samples=400, n_features=6, n_groups=3, random_state=0)
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(n_components=2, **params).fit(X, sensitive_features=s)
    components, scales, mean, _ = _resolve_projection(est)
    P = components.T @ np.diag(scales) @ components
    np.testing.assert_allclose(
        (X - mean) @ P + mean, est.inverse_transform(est.transform(X)), atol=1e-10
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_cv_helper_selects_best_mean_score():
    X, s = make_gaussian_groups(n_samples=400, n_features=6, random_state=0)
    X = StandardScaler().fit_transform(X) * 2.0 + 1.0
    search = robust_fair_pca_cv(
        X,
        s,
        n_components=2,
        alphas=(0.0, 0.15),
        lams=(0.0, 1.0),
        preprocessor=StandardScaler(),
        random_state=0,
        n_iter=30,
        n_restarts=1,
    )
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 4
    best = int(np.argmax(scores))
    assert search.best_params_ == search.cv_results_["params"][best]
    # Recompute one grid point by hand: the folds, the fold standardisation and the scorer.
    params = search.cv_results_["params"][best]
    cv = search.cv
    manual = []
    for train, test in cv.split(X):
        scaler = StandardScaler().fit(X[train])
        est = RobustFairPCA(
            n_components=2,
            alpha=params["robustfairpca__alpha"],
            lam=params["robustfairpca__lam"],
            n_iter=30,
            n_restarts=1,
            random_state=search.estimator[-1].random_state,
        ).fit(scaler.transform(X[train]), sensitive_features=s[train])
        Xt, Xtr = scaler.transform(X[test]), scaler.transform(X[train])
        P = np.eye(X.shape[1]) - est.components_.T @ est.components_
        # The authors' CV code: each validation group centred on its training-fold mean.
        errors = [
            np.mean(np.sum(((Xt[s[test] == g] - Xtr[s[train] == g].mean(axis=0)) @ P) ** 2, axis=1))
            for g in np.unique(s)
        ]
        are = np.mean(np.sum(((Xt - est.mean_) @ P) ** 2, axis=1))
        manual.append(-(are + max(errors) - min(errors)))
    assert scores[best] == pytest.approx(np.mean(manual), rel=1e-10)
    assert search.best_estimator_[-1].groups_ is not None


@pytest.mark.slow
@pytest.mark.requires_data
def test_vu2022_selection_minimises_validation_are_plus_abdiff():
    # The paper's selection on E. coli with a small grid, against an independent 3-fold
    # computation of ARE + ABDiff: each training fold standardised on its own, each group
    # of the validation fold centred on that group's mean in the training fold (as the
    # selection documents). With lam = 2.5 the descent is chaotic (a 1e-15 change of its
    # starts moves the objective by ~1e-4), so only the criterion the selection computes,
    # not a neighbouring one, can be expected to share its argmin.
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.utils import check_random_state

    data = vu2022("ecoli", split=0)
    X, s = data.X_train, data.s_train
    alphas, lams = (0.05, 0.15), (0.0, 2.5)
    best = experiments.vu2022_selection(data, 0, alphas=alphas, lams=lams)
    seed = check_random_state(0).randint(np.iinfo(np.int32).max)  # documented seeding

    def error(rows, centre, components):
        centred = rows - centre
        residual = centred - centred @ components.T @ components
        return np.mean(np.sum(residual**2, axis=1))

    criterion = {}
    for alpha in alphas:
        for lam in lams:
            scores = []
            for train, test in KFold(3, shuffle=True, random_state=seed).split(X):
                scaler = StandardScaler().fit(X[train])
                Xt, st = scaler.transform(X[train]), s[train]
                est = fairpca.RobustFairPCA(
                    n_components=3, alpha=alpha, lam=lam, random_state=seed
                ).fit(Xt, sensitive_features=st)
                Xv, sv = scaler.transform(X[test]), s[test]
                C = est.components_
                are = np.mean(np.sum((Xv - est.mean_ - (Xv - est.mean_) @ C.T @ C) ** 2, axis=1))
                groups = [error(Xv[sv == g], Xt[st == g].mean(axis=0), C) for g in np.unique(sv)]
                scores.append(are + max(groups) - min(groups))
            criterion[(alpha, lam)] = np.mean(scores)
    assert set(best) == {"alpha", "lam"}
    assert criterion[(best["alpha"], best["lam"])] == pytest.approx(min(criterion.values()))
    # The grid matters here: the criterion is not flat.
    assert max(criterion.values()) > 1.01 * min(criterion.values())


def test_radius_plot_is_mean_and_spread_against_alpha():
    keys = [("RobustFairPCA", f"alpha={a:g}", "ARE+ABDiff", i) for a in (0, 5, 10) for i in (0, 1)]
    values = [4.0, 6.0, 2.0, 2.0, 3.0, 5.0]
    fig = experiments.TARGETS["vu2022-radius"].figure(claims_details(keys, values))
    (ax,) = fig.axes
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), [0, 5, 10])
    np.testing.assert_allclose(line.get_ydata(), [5.0, 2.0, 4.0])
    np.testing.assert_allclose(ax.get_lines()[1].get_xdata(), [5, 5])  # the smallest mean
    assert "alpha" in ax.get_xlabel() and "ARE + ABDiff" in ax.get_ylabel()
