"""What every fairpca estimator shares beyond scikit-learn's mixins.

- The documentation link of the HTML representation (scikit-learn's
  ``_doc_link_module`` and ``_doc_link_template``): each estimator's page of
  the API reference.
- :meth:`FairpcaMixin.compact`: drop what a fitted model knows about the
  groups beyond what ``transform`` needs, before the model is deployed.

- The one front door of ``fit`` and ``partial_fit`` (:class:`fairpca._front_door.FrontDoor`):
  validation, Dask or memory, weights, sparse input, the no-groups rule and
  transactional calls, dispatched to each method's solve.

Used by :class:`fairpca.FairPCABase` and by the three estimators that are not
linear projections of its kind (``LinearErasure``, ``FairKernelPCA``,
``StreamingFairPCA``).
"""

from __future__ import annotations

from typing import Self

from sklearn.utils.validation import check_is_fitted

from fairpca._front_door import FrontDoor

__all__ = ["FairpcaMixin"]

#: Where the API reference lives; ``{estimator_name}`` is the class name.
DOC_LINK_TEMPLATE = (
    "https://fairpca.readthedocs.io/en/latest/api/generated/fairpca.{estimator_name}.html"
)


class FairpcaMixin(FrontDoor):
    """Documentation link, :meth:`compact` and the front door, shared by every estimator.

    A class lists in ``_group_attributes`` its fitted attributes that describe
    the groups (labels, counts, moments, per-group losses or constraint
    values) or that are large solver state not read by ``transform``;
    :meth:`compact` deletes them.
    """

    _doc_link_module = "fairpca"
    _doc_link_template = DOC_LINK_TEMPLATE

    #: Fitted attributes deleted by :meth:`compact` (those present are deleted).
    _group_attributes: tuple[str, ...] = ("groups_", "group_counts_", "moments_")

    def compact(self, *, keep: tuple[str, ...] | list[str] = ()) -> Self:
        """Drop what the fitted model knows about the groups beyond what ``transform`` needs.

        After ``fit``, a model holds statistics of each protected group (see
        the user guide, "What a fitted model reveals about the groups"):
        their labels, row counts, and for most estimators each group's mean
        and scatter matrix (``moments_``), which any copy of a deployed model
        (a pickle, a ``skops`` file) carries along. ``compact`` deletes those
        attributes, and large solver state that ``transform`` does not read,
        so that the model keeps its projection (``components_``, ``mean_``,
        ...) and its pooled, group-blind summaries only. ``transform`` and
        ``inverse_transform`` are unchanged.

        ``partial_fit`` then refuses with a ``ValueError`` (it merges new rows
        into the dropped per-group moments); ``fit`` works as before.

        Parameters
        ----------
        keep : sequence of str, default=()
            Attributes to keep although they describe the groups, e.g.
            ``("groups_",)`` to keep the labels on purpose.

        Returns
        -------
        self : object
            The same estimator, compacted.
        """
        check_is_fitted(self)
        unknown = set(keep) - set(self._group_attributes)
        if unknown:
            raise ValueError(
                f"keep names attributes that compact does not drop: {sorted(unknown)}; "
                f"{type(self).__name__}.compact drops {list(self._group_attributes)}."
            )
        moments = getattr(self, "moments_", None)
        if moments is not None and "moments_" not in keep:
            # transform's guard against cancellation in sparse products reads these.
            self._feature_variances = moments.to_numpy().variances
        for name in self._group_attributes:
            if name not in keep:
                self.__dict__.pop(name, None)
        return self

    def _spread(self):
        """Pooled variance of each feature: from ``moments_``, or kept by :meth:`compact`."""
        moments = getattr(self, "moments_", None)
        return moments.variances if moments is not None else self._feature_variances
