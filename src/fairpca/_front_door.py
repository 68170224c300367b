"""The one front door of every estimator: ``fit`` and ``partial_fit`` dispatch.

:class:`FrontDoor` (a base of :class:`fairpca._mixins.FairpcaMixin`, so of every
estimator) owns what is the same for every method: the parameter check
before any data is read, the package's rule for a fit without groups
(:func:`fairpca._config.missing_groups`), forgetting an earlier fit, the
choice between Dask and in-memory input and the refusal of what the method
does not support (Dask collections, sparse ``X``, ``sample_weight``),
validating ``X`` (width, feature names and count), the bookkeeping of
``partial_fit`` (continuing an earlier fit, groups in every call or in none,
a model emptied by ``compact``), and transactional calls (a failed call leaves
the estimator as it was). A method writes only its solve, in hooks:

``_fit_in_memory(X, y, sensitive_features, weights)``
    ``X`` validated (NumPy, or scipy.sparse where declared), ``weights``
    validated or None. The default (for methods that need only the group
    moments) computes them and calls ``_fit_from_moments``.
``_fit_dask(X, y, sensitive_features, da)``
    Dask input (``da`` is ``dask.array``). The default computes the group
    moments in one pass and calls ``_fit_from_moments``.
``_partial_fit_chunk(X, y, sensitive_features, weights)``
    One more validated chunk. The default merges its group moments into
    ``moments_`` and calls ``_fit_from_moments`` (group-blind, with a
    warning, while the rows so far cannot define the fair answer).
``_fit_from_moments(moments, *, grouped, fair)``
    The solve of a moment-only method: ``grouped`` tells whether
    ``sensitive_features`` was given, ``fair`` whether the moments define the
    fair answer (else the group-blind one is fitted).

What a class supports is declared on it (``_supports_dask``,
``_supports_sparse``, ``_supports_sample_weight``, ``_supports_partial_fit``)
and read by the front door, the scikit-learn tags and the registry
(:func:`fairpca.estimator_capabilities`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys

import numpy as np
from sklearn.utils._array_api import check_same_namespace
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import validate_data

from fairpca._array_api import (
    device_namespace,
    fitted_to_device,
    float_dtypes,
    held_namespace,
    namespace_of,
    refuse_array_api,
    to_host,
)
from fairpca._config import check_require_groups, missing_groups
from fairpca._dask import _dask_labels, _dask_rows, _import_dask, _is_dask_collection
from fairpca._sparse import SPARSE_FORMATS
from fairpca._validation import (
    _check_group_sizes,
    _check_n_groups,
    check_covariates,
    check_estimator_data,
    check_sample_weight,
    check_sensitive_features,
    check_width,
    split_sensitive_features,
)
from fairpca._warnings import warn
from fairpca.moments import GroupMoments

__all__ = [
    "FrontDoor",
    "attribute_moments",
    "attribute_moments_dask",
    "forget_fit",
    "moments_problem",
    "record_dask_features",
    "transactional",
]


# --------------------------------------------------------------- transactions
@contextlib.contextmanager
def verbose_output(estimator):
    """While ``estimator`` fits with ``verbose > 0``, print the package's progress to stderr.

    The methods report progress on the ``fairpca.*`` loggers at INFO level. As
    scikit-learn estimators print when verbose, a handler writing plain lines
    to stderr is attached for the duration of the fit, unless logging is
    configured already (a handler on the root or the ``fairpca`` logger), in
    which case the messages go there.
    """
    package = logging.getLogger("fairpca")
    if not getattr(estimator, "verbose", 0) or package.handlers or logging.getLogger().handlers:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    with package_log_handler(handler):
        yield


@contextlib.contextmanager
def package_log_handler(handler):
    """Send the ``fairpca.*`` loggers' INFO lines (solver progress) to ``handler`` in the block."""
    package = logging.getLogger("fairpca")
    level = package.level
    package.addHandler(handler)
    package.setLevel(logging.INFO)
    try:
        yield
    finally:
        package.removeHandler(handler)
        package.setLevel(level)


def transactional(method):
    """Decorate ``fit``-like methods: if the call raises, the estimator is left as it was.

    Every attribute is put back (a refit deletes and replaces attributes, it
    does not change arrays in place), so a failed ``fit`` leaves neither a half
    fitted state nor a stale ``n_features_in_``, and a failed ``partial_fit``
    keeps the moments and components of the chunks before it. The call also
    prints progress when the estimator is verbose (:func:`verbose_output`).
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        saved = dict(vars(self))
        try:
            with verbose_output(self):
                return method(self, *args, **kwargs)
        except BaseException:
            state = vars(self)
            state.clear()
            state.update(saved)
            raise

    return wrapper


def forget_fit(estimator):
    """Delete every fitted attribute (``name_``), so that a refit keeps none of an earlier fit."""
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("_")]:
        delattr(estimator, name)


# -------------------------------------------------------------------- moments
def attribute_moments(
    X,
    sensitive_features,
    continuous=None,
    *,
    min_groups=2,
    min_group_size=1,
    weights=None,
    estimator_name="this fit",
    groups_held=0,
):
    """Group moments of in-memory data whose attribute table may hold continuous columns.

    The categorical columns of ``sensitive_features`` give the groups (their
    intersections when several); the ``continuous`` ones (see
    :func:`~fairpca._validation.split_sensitive_features`) are kept as
    covariates, whose cross-moments with ``X`` the pass accumulates. Without a
    categorical column all rows form one group, labelled 0. Labels are checked
    before the pass; whether the covariates vary is checked after it by
    :func:`moments_problem`.

    ``weights`` are validated sample weights (or None). Once the number ``k``
    of groups is known, and before the pass, the ``k + 1`` dense ``p x p``
    matrices it leads to (plus ``groups_held`` already held, e.g. by
    ``partial_fit`` merging into earlier moments) are checked against the
    memory budget (:func:`~fairpca._validation.check_width`, naming
    ``estimator_name``).

    Returns
    -------
    moments : GroupMoments
    codes : ndarray of shape (n_samples,)
        Group code of each row.
    covariate_names : list of str or None
    """
    n_samples = X.shape[0]
    categorical, covariates, names = split_sensitive_features(sensitive_features, continuous)
    if covariates is not None:
        covariates = check_covariates(covariates, n_samples, names)
        min_groups = 1
    if categorical is None:
        groups, codes = np.array([0]), np.zeros(n_samples, dtype=np.intp)
    else:
        groups, codes = check_sensitive_features(
            categorical, n_samples, min_groups=min_groups, min_group_size=min_group_size
        )
    width = X.shape[1] + (0 if covariates is None else covariates.shape[1])
    check_width(width, estimator_name, n_groups=len(groups) + groups_held)
    return GroupMoments._from_codes(X, codes, groups, covariates, weights), codes, names


def attribute_moments_dask(X, sensitive_features, continuous, da):
    """As :func:`attribute_moments` for Dask input: ``(moments, labels, covariate_names)``.

    ``X`` has whole rows per block; ``labels`` are the categorical labels lined
    up with its blocks (None when every attribute is continuous).
    """
    categorical, covariates, names = split_sensitive_features(sensitive_features, continuous)
    labels = None if categorical is None else _dask_labels(categorical, X, da)
    moments = GroupMoments.from_dask(X, labels, covariates)
    return moments, labels, names


def moments_problem(moments, covariate_names=None, min_group_size=1):
    """Why ``moments`` cannot define a fair projection, or None when they can.

    A fair projection needs rows that are not all equal, two groups (or one
    group and continuous attributes that vary), and ``min_group_size`` rows in
    every group.
    """
    xp, _ = namespace_of(moments.means)  # read where the moments are held
    if not float(xp.linalg.trace(moments.covariance())) > 0:
        return (
            "X has zero variance (every row is the same): every projection keeps the same "
            "(zero) variance, so no fair projection is defined."
        )
    try:
        if moments.n_covariates == 0:
            _check_n_groups(moments.groups)
        _check_group_sizes(moments.groups, moments.counts, min_group_size)
    except ValueError as exc:
        return str(exc)
    if moments.n_covariates:
        _, cov_zz = moments.cross_covariance()
        pooled = moments.proportions @ to_host(moments.covariate_means)
        spread = np.sqrt(np.maximum(to_host(xp.linalg.diagonal(cov_zz)), 0.0))
        constant = spread <= 1e-12 * np.abs(pooled)
        if constant.any():
            names = covariate_names or [str(j) for j in range(moments.n_covariates)]
            listed = ", ".join(repr(n) for n, c in zip(names, constant, strict=True) if c)
            return (
                f"continuous sensitive feature(s) {listed} are constant on these rows: "
                "there is no covariance with them to remove; drop them."
            )
    return None


def record_dask_features(estimator, n_features, columns):
    """Set ``n_features_in_`` (and ``feature_names_in_``) of a fit on Dask input.

    Same rule as scikit-learn: names are kept when every column name is a string.
    """
    estimator.n_features_in_ = int(n_features)
    if columns is not None and all(isinstance(c, str) for c in columns):
        estimator.feature_names_in_ = np.asarray(columns, dtype=object)
    else:
        estimator.__dict__.pop("feature_names_in_", None)


def _single_group_moments(X, weights=None):
    """Moments of all rows of ``X`` as one group (for group-blind fits)."""
    codes = np.zeros(X.shape[0], dtype=np.intp)
    return GroupMoments._from_codes(X, codes, np.array([0]), weights=weights)


def _array_api_classes():
    """Names of the package's estimator classes that declare ``_supports_array_api``.

    Found among the subclasses of :class:`FrontDoor` (the registry imports every
    estimator module, so it cannot be imported here).
    """
    found, todo = set(), list(FrontDoor.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        public = cls.__module__.startswith("fairpca.") and not cls.__name__.startswith("_")
        if public and cls._supports_array_api and not inspect.isabstract(cls):
            found.add(cls.__name__)
    return sorted(found)


def _has_partial_fit(estimator):
    return type(estimator)._supports_partial_fit


# ----------------------------------------------------------------- the door
class FrontDoor:
    """``fit`` and ``partial_fit`` of every estimator: validation and dispatch to hooks.

    See the module docstring for the hooks. A class declares what it
    supports; the front door refuses the rest before reading the data.
    """

    #: ``fit`` accepts Dask arrays and DataFrames (through ``_fit_dask``).
    _supports_dask = False
    #: ``fit`` (and ``transform``) accept scipy.sparse ``X`` (CSR, CSC).
    _supports_sparse = False
    #: A grouped ``fit`` takes ``sample_weight`` (frequency weights of the moments).
    _supports_sample_weight = False
    #: Has ``partial_fit`` (through ``_partial_fit_chunk``).
    _supports_partial_fit = False
    #: ``transform`` is ``(X - mean_) @ components_.T``: a rank-d linear projection
    #: with a reconstruction (not an erasure map or a kernel feature map).
    _linear_projection = False
    #: ``transform`` needs ``sensitive_features`` after a grouped fit (a map per group).
    _transform_needs_groups = False

    #: ``fit``, ``partial_fit`` and ``transform`` accept array-API arrays (torch,
    #: CuPy, array-api-strict) under ``array_api_dispatch=True`` and compute in
    #: their namespace, on their device (:mod:`fairpca._array_api`): the methods
    #: that solve from the group moments alone.
    _supports_array_api = False
    #: With array-API input, ``_fit_from_moments`` reads the moments where they
    #: are held (its ``p x p`` solve in their namespace, on their device); else
    #: it solves from a host copy and the answer is moved to the device.
    _solves_in_namespace = False

    #: The fit accumulates dense ``p x p`` group moments: the width of ``X`` is
    #: checked against the memory budget before it is read, and the moment
    #: pass rejects NaN and infinities itself (no separate scan of ``X``).
    _holds_moments = True
    #: Fewest rows ``fit`` accepts.
    _fit_min_samples = 2
    #: Fewest rows a group may have.
    _min_group_size = 2
    #: What a fit without ``sensitive_features`` fits instead (for the warning).
    _group_blind_fit = "group-blind PCA"
    #: The warning of ``partial_fit`` while the rows so far cannot define the
    #: fair answer (``{name}``: the class, ``{problem}``: why).
    _partial_fit_waits = (
        "{name}.partial_fit cannot fit a fair projection from the rows so far: {problem} "
        "Fitting group-blind PCA of the rows so far until more chunks arrive."
    )
    #: The fitted attribute ``partial_fit`` merges new rows into (``compact`` drops it).
    _partial_fit_state = "moments_"

    # ------------------------------------------------------------ parameters
    def _check_params(self):
        """Validate the hyper-parameters; called before any data is read."""

    def _check_all_params(self):
        """The parameters common to every method (``require_groups``), then the method's."""
        check_require_groups(self)
        return self._check_params()

    def _continuous_columns(self):
        """The continuous columns of ``sensitive_features`` (None: all categorical).

        Methods whose constraint is defined for continuous attributes override it.
        """
        return None

    def _forget_fit(self):
        """Delete what an earlier fit left (every ``name_`` attribute)."""
        forget_fit(self)

    # ------------------------------------------------------------ validation
    def _validate_X(self, X, *, reset, ensure_all_finite=True, min_samples=1):
        """``X`` checked (and, with ``reset``, its features recorded); sparse where declared."""
        shape = getattr(X, "shape", None)
        if reset and self._holds_moments and isinstance(shape, tuple) and len(shape) == 2:
            # Before the validation pass over X: the shape alone tells.
            check_width(shape[1], type(self).__name__)
        return check_estimator_data(
            self,
            X,
            reset=reset,
            ensure_all_finite=ensure_all_finite,
            min_samples=min_samples,
            accept_sparse=SPARSE_FORMATS if self._supports_sparse else False,
        )

    def _check_weights(self, sample_weight, n_samples, grouped):
        """Validated sample weights, or None; refused where the fair fit reads rows."""
        if sample_weight is None:
            return None
        if grouped and not self._supports_sample_weight:
            raise TypeError(
                f"{type(self).__name__} does not support sample_weight: its fair fit reads "
                "the rows themselves, not only their weighted moments."
            )
        return check_sample_weight(sample_weight, n_samples)

    # ------------------------------------------------------------------ fit
    @transactional
    def _enter_fit(self, X, y=None, sensitive_features=None, sample_weight=None):
        """Validate and dispatch a ``fit``; return what the hook returns."""
        self._check_all_params()
        grouped = sensitive_features is not None
        if not grouped:
            # Before any data is read: refused here, or the group-blind fit with the warning.
            missing_groups(self, self._group_blind_fit)
        on_device = self._check_array_api(X)
        if on_device is not None or device_namespace(sensitive_features, sample_weight):
            # Labels and weights are small: encoded and validated on the host.
            sensitive_features, sample_weight = to_host(sensitive_features), to_host(sample_weight)
            y = to_host(y)
        self._forget_fit()
        if on_device is not None:
            X = self._validate_device_X(X, reset=True, min_samples=self._fit_min_samples)
            weights = self._check_weights(sample_weight, X.shape[0], grouped)
            result = self._fit_on_device(X, y, sensitive_features, weights)
        elif _is_dask_collection(X) or _is_dask_collection(sensitive_features):
            name = type(self).__name__
            if not self._supports_dask:
                raise TypeError(
                    f"{name} needs the rows of X, not only their group moments, so it does "
                    "not accept Dask collections; compute them into memory first "
                    "(X.compute()) or use a covariance-based method (MinMaxLossFairPCA, "
                    "ConvexFairPCA, RobustFairPCA, ParetoFairPCA)."
                )
            if sample_weight is not None:
                raise TypeError(
                    "sample_weight is not supported on Dask input; fit in memory or "
                    "chunk by chunk with partial_fit(..., sample_weight=...)."
                )
            _, da = _import_dask(f"{name}.fit")
            result = self._fit_dask(X, y, sensitive_features, da)
        else:
            X = self._validate_X(
                X,
                reset=True,
                ensure_all_finite=not self._holds_moments,
                min_samples=self._fit_min_samples,
            )
            weights = self._check_weights(sample_weight, X.shape[0], grouped)
            result = self._fit_in_memory(X, y, sensitive_features, weights)
        self._fitted_with_groups = grouped
        return result

    @transactional
    def _enter_partial_fit(self, X, y=None, sensitive_features=None, sample_weight=None):
        """Validate and dispatch a ``partial_fit``; return what the hook returns."""
        self._check_all_params()
        self._check_not_compacted()
        grouped = sensitive_features is not None
        if not grouped:
            missing_groups(self, self._group_blind_fit, method="partial_fit")
        earlier = getattr(self, "_fitted_with_groups", None)
        if earlier is not None and grouped != earlier:
            raise ValueError(
                "sensitive_features must be given in every partial_fit call or in none "
                "(as in a fit before them); earlier calls were "
                f"{'with' if earlier else 'without'} it."
            )
        on_device = self._check_array_api(X)
        sensitive_features, sample_weight = to_host(sensitive_features), to_host(sample_weight)
        if on_device is not None:
            X = self._validate_device_X(X, reset=earlier is None)
        else:
            X = self._validate_X(
                X, reset=earlier is None, ensure_all_finite=not self._holds_moments
            )
        weights = self._check_weights(sample_weight, X.shape[0], grouped)
        result = self._partial_fit_chunk(X, y, sensitive_features, weights)
        self._fitted_with_groups = grouped
        return result

    def _check_not_compacted(self, fitted="mean_", needed=None):
        """Raise the reason ``partial_fit`` cannot continue after :meth:`compact`."""
        needed = needed or self._partial_fit_state
        if hasattr(self, fitted) and not hasattr(self, needed):
            raise ValueError(
                f"{type(self).__name__}.partial_fit cannot continue this model: compact() "
                f"dropped {needed}, the per-group statistics that new rows are merged "
                "into. Fit again (fit, or partial_fit on every chunk from a new estimator), "
                "and call compact() after the last chunk."
            )

    # ------------------------------------------------------------ array API
    def _check_array_api(self, X):
        """``(xp, device)`` of array-API ``X`` under dispatch (None for NumPy and the rest).

        The one refusal of the estimators that cannot compute in another namespace.
        """
        on_device = device_namespace(X)
        if on_device is not None and not self._supports_array_api:
            raise refuse_array_api(self, on_device[0], _array_api_classes())
        return on_device

    def _validate_device_X(self, X, *, reset, min_samples=1):
        """Array-API ``X`` validated by scikit-learn (float of its device, finite, width)."""
        xp, device = device_namespace(X)
        return validate_data(
            self,
            X,
            reset=reset,
            dtype=list(float_dtypes(xp, device)),
            ensure_min_samples=min_samples,
        )

    def _device_rows(self, X, method, fitted="mean_"):
        """``X`` validated for ``method`` of an estimator fitted on array-API input, else None.

        Under dispatch, ``X`` must be of the namespace and device of the fit
        (scikit-learn's ``check_same_namespace``); the rows returned have the
        float type of the fitted arrays.
        """
        check_same_namespace(X, self, attribute=fitted, method=method)
        held = held_namespace(getattr(self, fitted))
        if held is None:
            return None
        xp, device = held
        if device_namespace(X) is None:
            raise ValueError(
                f"{type(self).__name__} was fitted on {xp.__name__.rsplit('.', 1)[-1]} arrays "
                f"on {device}: call {method} on arrays of that namespace and device under "
                "sklearn.set_config(array_api_dispatch=True)."
            )
        X = self._validate_device_X(X, reset=False)
        return xp.astype(X, getattr(self, fitted).dtype, copy=False)

    def _fit_on_device(self, X, y, sensitive_features, weights):
        """Fit on validated array-API ``X``: moments on its device, then :meth:`_solve_moments`."""
        moments, _, _ = self._memory_moments(X, sensitive_features, weights)
        grouped = sensitive_features is not None
        return self._solve_moments(moments, grouped=grouped, fair=grouped)

    def _solve_moments(self, moments, *, grouped, fair):
        """:meth:`_fit_from_moments`; moments held on a device are solved there or on the host.

        There with ``_solves_in_namespace``, else from a host copy. The fitted
        arrays left on the host are then moved to the moments' namespace and
        device, and ``moments_`` keeps the device moments (``partial_fit``
        merges there).
        """
        on_device = moments._device()
        if on_device is None:
            return self._fit_from_moments(moments, grouped=grouped, fair=fair)
        read = moments if self._solves_in_namespace else moments.to_numpy()
        result = self._fit_from_moments(read, grouped=grouped, fair=fair)
        fitted_to_device(self, *on_device)
        self.moments_ = moments
        return result

    # ---------------------------------------------------- the public methods
    def fit(self, X, y=None, *, sensitive_features=None, sample_weight=None):
        """Fit the estimator (validated and dispatched by the front door).

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or DataFrame of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Target, for methods whose fairness notion depends on it.
        sensitive_features : array-like, (n_samples,) or (n_samples, n_attr), default=None
            Protected group of each row. If omitted, the group-blind answer is
            fitted with a :class:`~fairpca.GroupBlindFitWarning`, or a
            ``ValueError`` is raised when groups are required.
        sample_weight : array-like of shape (n_samples,), default=None
            Frequency weights of the rows, for methods that support them.

        Returns
        -------
        self : object
            The fitted estimator. A failed fit leaves it as it was.
        """
        self._enter_fit(X, y, sensitive_features, sample_weight)
        return self

    @available_if(_has_partial_fit)
    def partial_fit(self, X, y=None, *, sensitive_features=None, sample_weight=None):
        """Update the fit with one more chunk of rows (see :meth:`fit`)."""
        self._enter_partial_fit(X, y, sensitive_features, sample_weight)
        return self

    # ---------------------------------------------------------------- hooks
    def _fit_in_memory(self, X, y, sensitive_features, weights):
        """Fit on validated in-memory ``X``; the default solves from the group moments."""
        moments, _, _ = self._memory_moments(X, sensitive_features, weights)
        grouped = sensitive_features is not None
        return self._solve_moments(moments, grouped=grouped, fair=grouped)

    def _fit_dask(self, X, y, sensitive_features, da):
        """Fit on Dask input; the default solves from the group moments of one pass."""
        X = self._dask_features(X, da)
        moments, _, _ = self._dask_moments(X, sensitive_features, da)
        grouped = sensitive_features is not None
        return self._fit_from_moments(moments, grouped=grouped, fair=grouped)

    def _partial_fit_chunk(self, X, y, sensitive_features, weights):
        """Merge the chunk's group moments into ``moments_`` and solve again."""
        held = getattr(self, "moments_", None)
        grouped = sensitive_features is not None
        names = None
        if grouped:
            part, _, names = attribute_moments(
                X,
                sensitive_features,
                self._continuous_columns(),
                min_groups=1,
                weights=weights,
                estimator_name=type(self).__name__,
                groups_held=0 if held is None else held.n_groups,
            )
        else:
            part = _single_group_moments(X, weights)
        if held is not None:
            try:
                part = held.merge(part)
            except TypeError as exc:
                raise TypeError(
                    f"sensitive_features of this chunk has labels of type {part.groups.dtype}, "
                    f"earlier chunks had {held.groups.dtype}; use one label type."
                ) from exc
        problem = moments_problem(part, names, self._min_group_size) if grouped else None
        if problem:
            warn(
                self._partial_fit_waits.format(name=type(self).__name__, problem=problem),
                UserWarning,
            )
        return self._solve_moments(part, grouped=grouped, fair=grouped and problem is None)

    def _fit_from_moments(self, moments, *, grouped, fair):
        """Solve from the group moments alone (methods that read only them)."""
        raise NotImplementedError(
            f"{type(self).__name__} reads rows: it implements _fit_in_memory and _fit_dask."
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._supports_sparse
        tags.array_api_support = self._supports_array_api
        return tags

    # ---------------------------------------------------- shared moment passes
    def _memory_moments(self, X, sensitive_features, weights):
        """``(moments, codes, covariate_names)`` of in-memory ``X`` for ``fit``.

        One group (labelled 0) without ``sensitive_features``; with them, a
        ``ValueError`` when the moments cannot define the fair answer.
        """
        if sensitive_features is None:
            return _single_group_moments(X, weights), np.zeros(X.shape[0], dtype=np.intp), None
        moments, codes, names = attribute_moments(
            X,
            sensitive_features,
            self._continuous_columns(),
            min_group_size=self._min_group_size,
            weights=weights,
            estimator_name=type(self).__name__,
        )
        problem = moments_problem(moments, names, self._min_group_size)
        if problem:
            raise ValueError(problem)
        return moments, codes, names

    def _dask_features(self, X, da):
        """Dask ``X`` with whole rows per block; its width checked and its features recorded."""
        X, columns = _dask_rows(X, da)
        if self._holds_moments:
            check_width(X.shape[1], type(self).__name__)
        record_dask_features(self, X.shape[1], columns)
        return X

    def _dask_moments(self, X, sensitive_features, da):
        """``(moments, labels, covariate_names)`` of Dask ``X`` in one pass, checked as in fit."""
        if sensitive_features is None:
            moments, labels, names = GroupMoments.from_dask(X, None), None, None
        else:
            moments, labels, names = attribute_moments_dask(
                X, sensitive_features, self._continuous_columns(), da
            )
        if moments.n_samples < self._fit_min_samples:
            raise ValueError(
                f"X has {moments.n_samples} row(s); {type(self).__name__} needs at least "
                f"{self._fit_min_samples}."
            )
        if sensitive_features is not None:
            problem = moments_problem(moments, names, self._min_group_size)
            if problem:
                raise ValueError(problem)
        return moments, labels, names
