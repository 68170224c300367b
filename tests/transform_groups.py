"""Calling ``fit`` and ``transform`` as the capabilities say, for registry-wide tests.

A supervised estimator (the capability ``supervised``, e.g.
:class:`~fairpca.FairPLS`) is fitted with a target ``y``. An estimator whose
``transform`` needs the groups (the capability
``transform_needs_groups``, e.g. :class:`~fairpca.QuadraticErasure`: one map
per group) takes them after a fit with groups; every other one takes ``X``
alone. The tests ask the registry, never the class name.
"""

import numpy as np

import fairpca


def transform_kwargs(est, s):
    """The keyword arguments of ``est.transform`` for rows whose groups are ``s``.

    ``{"sensitive_features": s}`` when the estimator's ``transform`` needs the
    groups and it was fitted with them (after a fit without groups, or after
    ``compact`` of one, its ``groups_`` is None and it takes ``X`` alone), else ``{}``.
    """
    needs = fairpca.estimator_capabilities(type(est)).transform_needs_groups
    return {"sensitive_features": s} if needs and getattr(est, "groups_", None) is not None else {}


def fit_kwargs(est, n_rows):
    """The keyword arguments besides ``X`` and the groups that ``est.fit`` needs.

    ``{"y": ...}`` (a numeric target of ``n_rows`` values) when the estimator
    is supervised, else ``{}``.
    """
    cls = est if isinstance(est, type) else type(est)
    if not fairpca.estimator_capabilities(cls).supervised:
        return {}
    return {"y": np.arange(n_rows, dtype=float) % 3}
