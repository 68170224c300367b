"""Array API inputs (torch on CPU, array-api-strict) for the moment path (issue 44).

Under ``array_api_dispatch=True`` the moment-based estimators compute the
moments, the ``p x p`` solve (MeanMatchingFairPCA, LinearErasure) and
``transform`` in the input's namespace, on its device, and give the NumPy
fit's answer; the others refuse with one error. ``SCIPY_ARRAY_API=1`` is set
by ``conftest.py``. torch and array-api-strict are in the ``test`` extra; the
torch cases skip (with the reason) only when torch is not installed.
array-api-strict's ``device1`` stands for a GPU: its arrays refuse to become
NumPy arrays, so a hidden copy to the host fails there.
"""

import importlib.util
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.utils._array_api import device as array_device
from sklearn.utils._array_api import get_namespace, move_estimator_to, move_to
from sklearn.utils.estimator_checks import check_array_api_input

import fairpca
from answers import assert_same_answer
from fairpca import GroupMoments, LinearErasure, MeanMatchingFairPCA, MinMaxLossFairPCA

SUPPORTED = [
    MeanMatchingFairPCA(n_components=2),
    MeanMatchingFairPCA(n_components=2, covariance_rank=3),
    LinearErasure(),
    MinMaxLossFairPCA(n_components=2),
]
UNSUPPORTED = fairpca.all_estimators(array_api=False)
NAMESPACES = ["torch", "array_api_strict"]
#: Agreement with the NumPy fit: rounding in float64; float32 input is read in
#: float64 where the device has it (as the NumPy route), so 1e-4 is generous.
TOLERANCE = {"float64": 1e-10, "float32": 1e-4}


def _namespace(name):
    """``(xp, device)`` of a namespace, skipped with the reason when it is not installed."""
    if name == "torch":
        if importlib.util.find_spec("torch") is None:
            pytest.skip("torch is not installed: pip install -e '.[test]' brings it")
        import torch  # installed: an import error fails the test, never skips it

        return torch, torch.device("cpu")
    xp = pytest.importorskip("array_api_strict")
    return xp, xp.Device("CPU_DEVICE")


def _host(a):
    with sklearn.config_context(array_api_dispatch=True):
        return move_to(a, xp=np, device="cpu")


def _assert_on(a, xp, device):
    """``a`` is an array of ``xp`` on ``device``."""
    with sklearn.config_context(array_api_dispatch=True):
        assert get_namespace(a)[0].__name__.endswith(xp.__name__.rsplit(".", 1)[-1])
        assert array_device(a) == device


def _data(n=600, p=6, k=2, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    s = np.array(["a", "b", "c"][:k])[np.arange(n) % k]
    X = rng.normal(size=(n, p)) * np.linspace(3.0, 0.5, p) + 10.0
    X[s == "a", 1] += 2.0
    X[s == "b", 2] *= 2.0
    return X.astype(dtype), s


def _close(a, b, tol):
    np.testing.assert_allclose(_host(a), b, atol=tol * max(1.0, np.abs(b).max()), rtol=0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize("estimator", SUPPORTED, ids=repr)
def test_fit_equals_numpy_fit(estimator, namespace, dtype):
    xp, device = _namespace(namespace)
    # Two groups: MinMaxLossFairPCA's exact two-group solver.
    X, s = _data(k=2, dtype=dtype)
    ref = clone(estimator).fit(X, sensitive_features=s)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        est = clone(estimator).fit(X_xp, sensitive_features=s)
        Z = est.transform(X_xp)
        back = est.inverse_transform(Z) if hasattr(est, "inverse_transform") else None
    tol = TOLERANCE[dtype]
    assert list(est.groups_) == list(ref.groups_)
    names = ("mean_", "components_", "erasure_", "explained_variance_", "component_scales_")
    for name in names:
        if hasattr(ref, name):
            _assert_on(getattr(est, name), xp, device)
    if isinstance(estimator, MinMaxLossFairPCA):
        # Its cutting planes stop at a duality gap (tol=1e-6): the optimum, not the
        # components, is what two fits share (tests/answers.py); the map in the
        # namespace is then checked against the same components applied in NumPy.
        with sklearn.config_context(array_api_dispatch=True):
            ref = move_estimator_to(est, np, "cpu")
        ref.moments_ = est.moments_.to_numpy()
        assert_same_answer(ref, clone(estimator).fit(X, sensitive_features=s))
    for name in names:
        if hasattr(ref, name):
            _close(getattr(est, name), getattr(ref, name), tol)
    for out, expected in ((Z, ref.transform(X)), (back, None)):
        if out is None:
            continue
        _assert_on(out, xp, device)
        if expected is None:
            expected = ref.inverse_transform(ref.transform(X))
        _close(out, expected, tol)
    # The moments stay in the namespace, on the device.
    _assert_on(est.moments_.scatters, xp, device)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_group_moments_in_the_namespace(namespace):
    xp, device = _namespace(namespace)
    X, s = _data(k=3)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=X.shape[0])
    ref = GroupMoments.from_arrays(X, s, sample_weight=w)
    with sklearn.config_context(array_api_dispatch=True):
        # Labels and weights as arrays of the namespace, or lists: encoded on the host.
        labels = list(s)
        got = GroupMoments.from_arrays(
            xp.asarray(X, device=device), labels, sample_weight=xp.asarray(w, device=device)
        )
    assert list(got.groups) == list(ref.groups)
    np.testing.assert_allclose(got.counts, ref.counts, rtol=1e-12)
    for name in ("means", "scatters"):
        _assert_on(getattr(got, name), xp, device)
        _close(getattr(got, name), getattr(ref, name), 1e-10)
    host = got.to_numpy()
    assert isinstance(host.scatters, np.ndarray)
    np.testing.assert_allclose(host.covariance(), ref.covariance(), rtol=1e-10)


def test_labels_and_weights_as_torch_tensors():
    torch, device = _namespace("torch")
    X, s = _data(k=3)
    codes = np.unique(s, return_inverse=True)[1]
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=X.shape[0])
    ref = LinearErasure().fit(X, sensitive_features=codes, sample_weight=w)
    with sklearn.config_context(array_api_dispatch=True):
        est = LinearErasure().fit(
            torch.asarray(X),
            sensitive_features=torch.asarray(codes),
            sample_weight=torch.asarray(w),
        )
    assert list(est.groups_) == [0, 1, 2]
    _close(est.erasure_, ref.erasure_, 1e-10)


def test_continuous_attribute_on_the_device():
    torch, device = _namespace("torch")
    X, s = _data(k=2)
    age = X[:, 0] * 0.3 + np.random.default_rng(3).normal(size=X.shape[0])
    attrs = np.column_stack([(s == "a").astype(float), age])
    params = dict(n_components=2, continuous_attributes=[1])
    ref = MeanMatchingFairPCA(**params).fit(X, sensitive_features=attrs)
    with sklearn.config_context(array_api_dispatch=True):
        est = MeanMatchingFairPCA(**params).fit(torch.asarray(X), sensitive_features=attrs)
    _close(est.components_, ref.components_, 1e-10)
    _assert_on(est.moments_.cross_scatters, torch, device)


@pytest.mark.parametrize("cls", [MeanMatchingFairPCA, LinearErasure])
def test_partial_fit_on_torch_batches_accumulates_on_the_device(cls):
    torch, device = _namespace("torch")
    X, s = _data(n=900, k=3)
    X_t = torch.asarray(X)
    with sklearn.config_context(array_api_dispatch=True):
        whole = cls().fit(X_t, sensitive_features=s)
        est = cls()
        # The usual loop over a data loader of embeddings (labels as tensors too).
        labels = torch.asarray(np.unique(s, return_inverse=True)[1])
        for start in range(0, X.shape[0], 200):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # the first batches: few rows
                est.partial_fit(
                    X_t[start : start + 200], sensitive_features=labels[start : start + 200]
                )
            _assert_on(est.moments_.scatters, torch, device)
    np.testing.assert_array_equal(est.moments_.counts, whole.moments_.counts)
    _close(est.moments_.scatters, _host(whole.moments_.scatters), 1e-10)
    name = "components_" if hasattr(whole, "components_") else "erasure_"
    _close(getattr(est, name), _host(getattr(whole, name)), 1e-10)


@pytest.mark.parametrize("cls", UNSUPPORTED, ids=lambda c: c.__name__)
def test_the_others_refuse_with_one_error(cls):
    torch, _ = _namespace("torch")
    X, s = _data(n=60, k=2)
    est = cls(n_components=1) if "n_components" in cls().get_params() else cls()
    with sklearn.config_context(array_api_dispatch=True):
        with pytest.raises(TypeError) as info:
            est.fit(torch.asarray(X), sensitive_features=s)
    message = str(info.value)
    assert message.startswith(f"{cls.__name__} does not accept torch arrays")
    assert "GroupMoments, LinearErasure, MeanMatchingFairPCA, MinMaxLossFairPCA" in message
    assert not hasattr(est, "n_features_in_")  # refused before reading X


def test_capabilities_and_tags():
    assert [c.__name__ for c in fairpca.all_estimators(array_api=True)] == [
        "LinearErasure",
        "MeanMatchingFairPCA",
        "MinMaxLossFairPCA",
    ]
    for cls in fairpca.all_estimators():
        assert sklearn.utils.get_tags(cls()).array_api_support == (
            cls in fairpca.all_estimators(array_api=True)
        )


def test_transform_refuses_another_namespace():
    torch, _ = _namespace("torch")
    X, s = _data(k=2)
    with sklearn.config_context(array_api_dispatch=True):
        est = MeanMatchingFairPCA().fit(torch.asarray(X), sensitive_features=s)
        with pytest.raises(ValueError, match="must use the same namespace"):
            est.transform(X)


@pytest.mark.parametrize(
    "namespace,device,dtype",
    [
        ("torch", "cpu", "float64"),
        ("torch", "cpu", "float32"),
        ("array_api_strict", "CPU_DEVICE", "float64"),
        ("array_api_strict", "device1", "float32"),
    ],
)
@pytest.mark.parametrize("estimator", SUPPORTED[:1] + SUPPORTED[2:], ids=repr)
def test_sklearn_array_api_checks(estimator, namespace, device, dtype):
    """scikit-learn's common check, with the values compared to the NumPy fit."""
    _namespace(namespace)
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", fairpca.GroupBlindFitWarning
        )  # the check fits without groups
        check_array_api_input(
            type(estimator).__name__,
            estimator,
            array_namespace=namespace,
            device_name=device,
            dtype_name=dtype,
            check_values=True,
        )


def test_compact_after_a_fit_on_the_device():
    torch, device = _namespace("torch")
    X, s = _data(k=2)
    X_t = torch.asarray(X)
    with sklearn.config_context(array_api_dispatch=True):
        est = MeanMatchingFairPCA().fit(X_t, sensitive_features=s)
        Z = est.transform(X_t)
        est.compact()
        assert not hasattr(est, "moments_")
        _close(est.transform(X_t), _host(Z), 1e-12)


# ------------------------------------------------ the p x p solve on the device
#: Each takes another branch of the solve (null space, penalty, covariance
#: matching, a fraction of variance, separate attributes; LEACE, orthogonal,
#: the shrinkages, the trace constraint, concept-erasure's rank rule).
IN_NAMESPACE = [
    MeanMatchingFairPCA(n_components=2),
    MeanMatchingFairPCA(n_components=2, mean_penalty=3.0),
    MeanMatchingFairPCA(n_components=2, covariance_rank=4, covariance_ddof=1),
    MeanMatchingFairPCA(n_components=0.5),
    MeanMatchingFairPCA(n_components=2, attributes="separate"),
    LinearErasure(),
    LinearErasure(method="orthogonal"),
    LinearErasure(shrinkage="oas"),
    LinearErasure(shrinkage="ledoit-wolf", constrain_cov_trace=True),
    LinearErasure(shrinkage=0.3, svd_tol=0.01),
    LinearErasure(attributes="separate"),
]
#: torch on the CPU, and array-api-strict's second device (no way to NumPy).
DEVICES = [("torch", "cpu"), ("array_api_strict", "device1")]


def _device(namespace, name):
    xp, _ = _namespace(namespace)
    return xp, (xp.device(name) if namespace == "torch" else xp.Device(name))


def _labels(estimator, s):
    """Two attributes (three values by two) for ``attributes="separate"``, else ``s``."""
    if estimator.get_params().get("attributes") != "separate":
        return s
    return np.column_stack([s, (np.arange(len(s)) // 7) % 2])


def _no_host_copy(monkeypatch):
    """Make any copy of the moments to the host fail the test."""

    def refuse(self):
        raise AssertionError("the moments were copied to the host")

    monkeypatch.setattr(GroupMoments, "to_numpy", refuse)


def _assert_same_fit(est, ref, tol):
    """The fitted map of ``est`` (on a device) equals the NumPy fit ``ref``.

    Components are compared as projectors ``V^T V`` (free of the solver's sign
    and of rotations within repeated eigenvalues), the erasure map directly
    (it is unique).
    """
    if hasattr(ref, "components_"):
        V = _host(est.components_)
        _close(V.T @ V, ref.components_.T @ ref.components_, tol)
        _close(est.explained_variance_, ref.explained_variance_, tol)
        assert getattr(est, "n_constraints_", 0) == getattr(ref, "n_constraints_", 0)
    else:
        _close(est.erasure_, ref.erasure_, tol)
        assert (est.rank_, est.shrinkage_) == pytest.approx((ref.rank_, ref.shrinkage_), rel=tol)


@pytest.mark.parametrize("namespace,device_name", DEVICES)
@pytest.mark.parametrize("estimator", IN_NAMESPACE, ids=repr)
def test_the_solve_runs_on_the_device(estimator, namespace, device_name, monkeypatch):
    xp, device = _device(namespace, device_name)
    X, s = _data(n=700, p=8, k=3)
    labels = _labels(estimator, s)
    ref = clone(estimator).fit(X, sensitive_features=labels)
    expected = ref.transform(X)
    if hasattr(ref, "inverse_transform"):
        expected = ref.inverse_transform(expected)  # the projection: free of signs
    X_xp = xp.asarray(X, device=device)
    _no_host_copy(monkeypatch)
    with sklearn.config_context(array_api_dispatch=True):
        est = clone(estimator).fit(X_xp, sensitive_features=labels)
        out = est.transform(X_xp)
        if hasattr(est, "inverse_transform"):
            out = est.inverse_transform(out)
    for name in ("mean_", "components_", "erasure_", "explained_variance_"):
        if hasattr(est, name):
            _assert_on(getattr(est, name), xp, device)
    _assert_on(out, xp, device)
    _assert_same_fit(est, ref, 1e-10)
    _close(out, expected, 1e-10)


@pytest.mark.parametrize("namespace,device_name", DEVICES)
@pytest.mark.parametrize("cls", [MeanMatchingFairPCA, LinearErasure])
def test_group_blind_fit_on_the_device(cls, namespace, device_name, monkeypatch):
    xp, device = _device(namespace, device_name)
    X, _ = _data(n=300, p=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fairpca.GroupBlindFitWarning)
        ref = cls().fit(X)
        _no_host_copy(monkeypatch)
        with sklearn.config_context(array_api_dispatch=True):
            est = cls().fit(xp.asarray(X, device=device))
    _assert_same_fit(est, ref, 1e-10)
    if cls is MeanMatchingFairPCA:  # PCA: against scikit-learn's, an independent solver
        from sklearn.decomposition import PCA

        pca = PCA(n_components=2).fit(X)
        _close(
            _host(est.components_).T @ _host(est.components_),
            pca.components_.T @ pca.components_,
            1e-10,
        )


@pytest.mark.parametrize("namespace,device_name", DEVICES)
def test_ledoit_wolf_fit_and_batches_on_the_device(namespace, device_name):
    """The fourth moment's pass runs on the device too, in fit and in partial_fit."""
    from sklearn.covariance import ledoit_wolf_shrinkage

    xp, device = _device(namespace, device_name)
    X, s = _data(n=600, p=6, k=3)
    ref = LinearErasure(shrinkage="ledoit-wolf").fit(X, sensitive_features=s)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        est = LinearErasure(shrinkage="ledoit-wolf").fit(X_xp, sensitive_features=s)
        batches = LinearErasure(shrinkage="ledoit-wolf")
        for start in range(0, X.shape[0], 150):
            batches.partial_fit(
                X_xp[start : start + 150, ...], sensitive_features=s[start : start + 150]
            )
    # scikit-learn's coefficient from the rows: an independent computation.
    assert est.shrinkage_ == pytest.approx(ledoit_wolf_shrinkage(X), rel=1e-10)
    for fitted in (est, batches):
        _assert_on(fitted.erasure_, xp, device)
        _assert_same_fit(fitted, ref, 1e-10)


@pytest.mark.parametrize("namespace,device_name", DEVICES)
def test_oracle_transform_on_the_device(namespace, device_name):
    xp, device = _device(namespace, device_name)
    X, s = _data(n=600, p=6, k=3)
    codes = np.unique(s, return_inverse=True)[1].astype(float)
    age = X[:, 0] * 0.3 + np.random.default_rng(4).normal(size=X.shape[0])
    attrs = np.column_stack([codes, age])
    est_params = dict(continuous_attributes=[1])
    ref = LinearErasure(**est_params).fit(X, sensitive_features=attrs)
    X_xp = xp.asarray(X, device=device)
    with sklearn.config_context(array_api_dispatch=True):
        est = LinearErasure(**est_params).fit(X_xp, sensitive_features=attrs)
        out = est.transform(X_xp, sensitive_features=attrs)
    _assert_on(out, xp, device)
    expected = ref.transform(X, sensitive_features=attrs)
    _close(out, expected, 1e-10)
    # Oracle LEACE is the residual of the least-squares fit of X on [one-hot, age]:
    # independent of the moments, from the rows.
    design = np.column_stack([np.eye(3)[codes.astype(int)], age])
    design = design - design.mean(axis=0)
    coef = np.linalg.lstsq(design, X - X.mean(axis=0), rcond=None)[0]
    _close(out, X - design @ coef, 1e-10)


def test_minmax_loss_solves_from_one_host_copy(monkeypatch):
    """MinMaxLossFairPCA iterates on the host: the moments are copied there once."""
    xp, device = _device("array_api_strict", "device1")
    X, s = _data(k=2)
    copies = []
    to_numpy = GroupMoments.to_numpy

    def counted(self):
        copies.append(self)
        return to_numpy(self)

    monkeypatch.setattr(GroupMoments, "to_numpy", counted)
    with sklearn.config_context(array_api_dispatch=True):
        est = MinMaxLossFairPCA(n_components=2).fit(
            xp.asarray(X, device=device), sensitive_features=s
        )
    assert len(copies) == 1
    _assert_on(est.components_, xp, device)
    _assert_on(est.moments_.scatters, xp, device)
