"""Calling ``transform`` as the capabilities say, for the tests that loop over the registry.

An estimator whose ``transform`` needs the groups (the capability
``transform_needs_groups``, e.g. :class:`~fairpca.QuadraticErasure`: one map
per group) takes them after a fit with groups; every other one takes ``X``
alone. The tests ask the registry, never the class name.
"""

import fairpca


def transform_kwargs(est, s):
    """The keyword arguments of ``est.transform`` for rows whose groups are ``s``.

    ``{"sensitive_features": s}`` when the estimator's ``transform`` needs the
    groups and it was fitted with them (after a fit without groups, or after
    ``compact`` of one, its ``groups_`` is None and it takes ``X`` alone), else ``{}``.
    """
    needs = fairpca.estimator_capabilities(type(est)).transform_needs_groups
    return {"sensitive_features": s} if needs and getattr(est, "groups_", None) is not None else {}
