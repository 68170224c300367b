"""
A scikit-learn Pipeline with metadata routing
=============================================

A fair representation is usually one step of a larger model. The fair
estimators are scikit-learn transformers, so they fit in a
:class:`~sklearn.pipeline.Pipeline`; the group labels reach the fair step
through scikit-learn's *metadata routing*:

1. enable it once: ``sklearn.set_config(enable_metadata_routing=True)``;
2. tell the fair step that its ``fit`` wants the labels:
   ``est.set_fit_request(sensitive_features=True)``;
3. pass them to the pipeline: ``pipe.fit(X, y, sensitive_features=s)``, or
   to ``cross_validate`` / ``GridSearchCV`` as
   ``params={"sensitive_features": s}``.

The other steps do not ask for the labels and never see them. Here a logistic
regression is trained on a two-dimensional representation, and we compare the
fairness of its predictions on held-out rows with :mod:`fairlearn`'s metrics.
"""

import matplotlib.pyplot as plt
import numpy as np
import sklearn
from fairlearn.metrics import (
    demographic_parity_difference,
    equalized_odds_difference,
)
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_validate, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairpca import LinearErasure, MeanMatchingFairPCA
from fairpca.datasets import make_gaussian_groups

sklearn.set_config(enable_metadata_routing=True)

X, s, y = make_gaussian_groups(
    n_samples=2000, mean_shift=2.0, random_state=0, return_target=True
)
X_train, X_test, s_train, s_test, y_train, y_test = train_test_split(
    X, s, y, test_size=0.3, stratify=s, random_state=0
)

# %%
# Three pipelines
# ---------------
# The same scaler and classifier around PCA, mean-matching fair PCA and LEACE
# (which keeps all ten features). Only the fair steps request
# ``sensitive_features``; PCA would refuse it, so its pipeline is fitted
# without.

pipelines = {
    "PCA": make_pipeline(
        StandardScaler(), PCA(n_components=2), LogisticRegression()
    ),
    "MeanMatchingFairPCA": make_pipeline(
        StandardScaler(),
        MeanMatchingFairPCA(n_components=2).set_fit_request(
            sensitive_features=True
        ),
        LogisticRegression(),
    ),
    "LinearErasure": make_pipeline(
        StandardScaler(),
        LinearErasure().set_fit_request(sensitive_features=True),
        LogisticRegression(),
    ),
}
results = {}
for name, pipe in pipelines.items():
    if name == "PCA":
        pipe.fit(X_train, y_train)
    else:
        pipe.fit(X_train, y_train, sensitive_features=s_train)
    predicted = pipe.predict(X_test)
    results[name] = {
        "accuracy": np.mean(predicted == y_test),
        "demographic parity difference": demographic_parity_difference(
            y_test, predicted, sensitive_features=s_test
        ),
        "equalized odds difference": equalized_odds_difference(
            y_test, predicted, sensitive_features=s_test
        ),
    }
    print(
        name,
        {key: round(float(value), 3) for key, value in results[name].items()},
    )

# %%
# On the PCA representation the classifier predicts the positive class at
# rates that differ by group; after either fair step the gaps shrink, at no
# loss of accuracy here. (The groups' base rates of ``y`` differ, so no
# representation makes every gap zero.)

fig, ax = plt.subplots(figsize=(7.5, 3.8), layout="constrained")
measures = list(next(iter(results.values())))
width = 0.25
for i, name in enumerate(results):
    positions = np.arange(len(measures)) + (i - 1) * width
    ax.bar(positions, [results[name][m] for m in measures], width, label=name)
ax.set_xticks(np.arange(len(measures)), measures)
ax.set_ylabel("held-out value")
ax.set_title("Logistic regression on each representation")
ax.legend()

# %%
# Cross-validation routes the labels too
# --------------------------------------
# ``cross_validate`` splits ``sensitive_features`` along with ``X`` and ``y``
# and hands each training fold's labels to the fair step.

scores = cross_validate(
    pipelines["MeanMatchingFairPCA"],
    X,
    y,
    params={"sensitive_features": s},
    cv=5,
)
print("cross-validated accuracy:", scores["test_score"].round(3))

# %%
# :func:`fairpca.metrics.downstream_fairness` computes the same kind of
# measures from out-of-fold predictions of a classifier trained on a fitted
# representation, and :func:`fairpca.metrics.report` puts them in one table
# with the representation metrics.
#
# Metadata routing is a global setting; switch it off again when done.

sklearn.set_config(enable_metadata_routing=False)
