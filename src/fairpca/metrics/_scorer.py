"""Scorer for model selection: ``-(ARE + ABDiff)`` of Vu et al. (2022)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from numpy.typing import ArrayLike

from fairpca._validation import _plain, check_data, check_sensitive_features
from fairpca.metrics._projection import _resolve_projection
from fairpca.metrics._reconstruction import _abdiff_are

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator
    from sklearn.utils.metadata_routing import MetadataRequest


def _final_step(estimator, X):
    """The fitted projection of ``estimator`` and ``X`` mapped into its input space."""
    if hasattr(estimator, "steps"):
        return estimator[-1], estimator[:-1].transform(X)
    return estimator, X


def _training_group_means(projection, groups):
    """Each group's mean in the data ``projection`` was fitted on, in the order of ``groups``."""
    moments = getattr(projection, "moments_", None)
    if moments is None or getattr(projection, "groups_", None) is None:
        raise ValueError(
            "center='train_group' needs a fair-PCA estimator fitted with sensitive_features "
            f"(its moments_ hold the training group means); got {type(projection).__name__}."
        )
    known = {_plain(g): i for i, g in enumerate(moments.groups)}
    missing = [_plain(g) for g in groups if _plain(g) not in known]
    if missing:
        raise ValueError(
            f"groups {missing} of the scored rows were not in the training data, so they "
            "have no training mean; use center='group' or 'pooled'."
        )
    return [moments.means[known[_plain(g)]] for g in groups]


class ReconstructionScorer:
    """Scorer ``-(ARE + ABDiff)``, the model-selection criterion of Vu et al. (2022).

    ARE is the average reconstruction error over all rows
    (:func:`fairpca.metrics.reconstruction_error`); ABDiff the largest gap
    between group average reconstruction errors. Greater is better, as
    scikit-learn expects. It accepts a fitted fair-PCA estimator or a
    :class:`~sklearn.pipeline.Pipeline` ending in one (the data then go
    through the earlier steps first), and requests ``sensitive_features`` via
    metadata routing, so it works in ``GridSearchCV`` / ``cross_validate``
    under ``sklearn.config_context(enable_metadata_routing=True)``.

    Parameters
    ----------
    center : {"pooled", "train_group", "group"}, default="pooled"
        Centre of each group's rows for ABDiff. ``"pooled"``: the projection's
        mean (:func:`fairpca.metrics.reconstruction_error_gap`, the quantity
        the RFPCA objective controls). ``"train_group"``: each group's mean in
        the data the projection was fitted on (read from its ``moments_``), as
        in Vu et al.'s evaluation and cross-validation code, which centres the
        held-out rows of a group on that group's training mean. ``"group"``:
        each group's own mean in the scored data (differs from
        ``"train_group"`` by the sampling error of the group means).

    Examples
    --------
    >>> import sklearn
    >>> from sklearn.model_selection import GridSearchCV
    >>> from fairpca import RobustFairPCA
    >>> from fairpca.metrics import ReconstructionScorer
    >>> with sklearn.config_context(enable_metadata_routing=True):  # doctest: +SKIP
    ...     est = RobustFairPCA(n_components=3).set_fit_request(sensitive_features=True)
    ...     search = GridSearchCV(est, {"lam": [0.0, 0.5]}, scoring=ReconstructionScorer(), cv=3)
    ...     search.fit(X, sensitive_features=s)
    """

    def __init__(self, center: Literal["pooled", "train_group", "group"] = "pooled") -> None:
        if center not in ("pooled", "train_group", "group"):
            raise ValueError(f"center must be 'pooled', 'train_group' or 'group', got {center!r}.")
        self.center = center

    def __call__(
        self,
        estimator: BaseEstimator,
        X: ArrayLike,
        y: ArrayLike | None = None,
        *,
        sensitive_features: ArrayLike | None = None,
    ) -> float:
        """Return ``-(ARE + ABDiff)`` of a fitted estimator on ``(X, sensitive_features)``."""
        projection, Xt = _final_step(estimator, X)
        Xt = check_data(Xt, "X")
        if sensitive_features is None:
            raise ValueError(
                "ReconstructionScorer needs sensitive_features: enable metadata routing "
                "(sklearn.config_context(enable_metadata_routing=True)) and pass them to fit."
            )
        groups, codes = check_sensitive_features(sensitive_features, Xt.shape[0], min_groups=2)
        components, scales, mean, _ = _resolve_projection(projection, Xt)
        group_means = None
        if self.center == "group":
            group_means = [Xt[codes == a].mean(axis=0) for a in range(len(groups))]
        elif self.center == "train_group":
            group_means = _training_group_means(projection, groups)
        abdiff, are = _abdiff_are(Xt, codes, len(groups), components, scales, mean, group_means)
        return -(are + abdiff)

    def get_metadata_routing(self) -> MetadataRequest:
        """Request ``sensitive_features`` for scoring (scikit-learn metadata routing)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="sensitive_features", alias=True)
        return request

    def __repr__(self):
        return f"ReconstructionScorer(center={self.center!r})"
