"""Held-out check of the linear guarantee: group predictability and downstream parity.

Not a speed benchmark: it prints, for PCA and the three linear-guarantee
methods, how well a logistic regression predicts the group from the
representation on held-out rows (balanced accuracy; chance 1/k) and the
demographic-parity gap of a logistic regression of the target. Data: Adult
(sex; sex x race, on UCI's train/test files) and COMPAS (race, Lee et al.'s
protocol, split 0). Needs the data sets (FAIRPCA_DATA or ../shared/data).

    python benchmarks/linear_held_out.py
"""

import os
from dataclasses import replace
from pathlib import Path

from sklearn.decomposition import PCA

from fairpca import FairKernelPCA, LinearErasure, MeanMatchingFairPCA
from fairpca.experiments import lee2022
from fairpca.experiments.held_out import adult_intersections, linear_guarantee_report

D = 10


def _estimators():
    return {
        "PCA": PCA(n_components=D),
        "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=D),
        "LinearErasure": LinearErasure(),
        "FairKernelPCA (approx)": FairKernelPCA(n_components=D, method="approx", random_state=0),
    }


def main():
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    data_home = os.environ.get("FAIRPCA_DATA") or (str(shared) if shared.is_dir() else None)
    adult = adult_intersections(data_home)
    settings = {
        "Adult, sex x race (UCI split)": adult,
        "Adult, sex (UCI split)": replace(
            adult, s_train=adult.s_train[:, 0], s_test=adult.s_test[:, 0]
        ),
        "COMPAS, race (Lee et al. split 0)": lee2022("compas", split=0, data_home=data_home),
    }
    print(f"d = {D} (LinearErasure keeps every feature)\n")
    for title, split in settings.items():
        report = linear_guarantee_report(_estimators(), split)
        print(f"### {title}\n")
        print(
            report.to_string(
                float_format="{:.4f}".format, formatters={"train_score_gap": "{:.1e}".format}
            )
        )
        print()


if __name__ == "__main__":
    main()
