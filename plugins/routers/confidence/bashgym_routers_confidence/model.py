"""p(student passes | features): scikit-learn's logistic regression, calibrated, as plain numbers.

The fit is scikit-learn's: a Pipeline of StandardScaler and LogisticRegression, wrapped in
CalibratedClassifierCV (method="sigmoid", ensemble=False: one model fitted on all outcomes, and
one Platt calibrator fitted on its out-of-fold scores) when the outcomes allow k-fold
calibration; the plain regularized logistic regression (already a probability) when they are
too few.

Why sigmoid and never isotonic, even with thousands of outcomes (where scikit-learn would
suggest isotonic): isotonic calibration is piecewise constant, so many tasks share one score and
a threshold cannot cut the fit data at a quantile — measured on the simulated set, 1,500
outcomes, `teacher-share=0.3` sent 21% of held-out tasks to the teacher (54 distinct scores).
Platt scaling is strictly increasing: the order of the tasks is the regression's, and the
target's share holds.

Why a file of numbers and not a pickle (joblib): a router file is something people pass around,
and unpickling a file runs whatever code it names. The fitted model is a handful of numbers —
the scaler's means and scales, the coefficients, the calibrator's two parameters — so they are
written as JSON and put back into the same scikit-learn estimators on load
(`StudentModel.from_json`); a test checks that the loaded model predicts exactly what the fitted
one did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV, calibration_curve
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from bashgym.contracts import InputError

# k-fold calibration needs each fold to hold both outcomes: at least this many of the rarer
# one, and this many outcomes in all (below: the uncalibrated logistic regression, said so)
MIN_PER_CLASS_TO_CALIBRATE = 3
MIN_TO_CALIBRATE = 30
MAX_FOLDS = 5


class FitError(InputError):
    """Outcomes a model cannot be fitted on (one line: what is missing and how to get it)."""


@dataclass
class StudentModel:
    """A fitted scaler + logistic regression and an optional calibrator over its score."""

    features: list[str]
    scaler: StandardScaler
    logistic: LogisticRegression
    calibration: str = "none"  # none | sigmoid
    calibrator: LogisticRegression | None = None  # Platt: a 1-feature logistic over the score

    def predict(self, rows: np.ndarray | list[list[float]]) -> np.ndarray:
        """p(student passes) per row of feature values (in `features` order)."""
        x = np.asarray(rows, dtype=float).reshape(-1, len(self.features))
        score = self.logistic.decision_function(self.scaler.transform(x))
        if self.calibrator is None:
            return np.asarray(self.logistic.predict_proba(self.scaler.transform(x))[:, 1])
        return np.asarray(self.calibrator.predict_proba(score.reshape(-1, 1))[:, 1])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "features": self.features,
            "scaler": {"mean": _list(self.scaler.mean_), "scale": _list(self.scaler.scale_)},
            "logistic": {
                "coef": _list(self.logistic.coef_[0]),
                "intercept": float(self.logistic.intercept_[0]),
                "C": float(self.logistic.C),
            },
            "calibration": {"method": self.calibration},
        }
        if self.calibrator is not None:  # sigmoid: p = 1 / (1 + exp(a * score + b))
            out["calibration"] |= {
                "a": -float(self.calibrator.coef_[0][0]),
                "b": -float(self.calibrator.intercept_[0]),
            }
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StudentModel:
        """The model `to_json` wrote, back in scikit-learn's estimators (ValueError if not)."""
        names = [str(n) for n in data["features"]]
        k = len(names)
        scaler = StandardScaler()
        scaler.mean_ = _array(data["scaler"]["mean"], k)
        scaler.scale_ = _array(data["scaler"]["scale"], k)
        scaler.var_ = scaler.scale_**2
        scaler.n_features_in_, scaler.n_samples_seen_ = k, 0
        logistic = _logistic(_array(data["logistic"]["coef"], k), data["logistic"]["intercept"])
        logistic.C = float(data["logistic"].get("C", 1.0))
        cal = data.get("calibration") or {"method": "none"}
        method = cal.get("method", "none")
        calibrator: LogisticRegression | None = None
        if method == "sigmoid":
            calibrator = _logistic(np.array([-float(cal["a"])]), -float(cal["b"]))
        elif method != "none":
            raise ValueError(f"unknown calibration method {method!r}")
        return cls(names, scaler, logistic, method, calibrator)


@dataclass
class Calibration:
    """How well the probabilities held on outcomes the model was not fitted on (k-fold,
    out-of-fold predictions); None where too few outcomes to tell."""

    method: str
    folds: int | None
    brier: float | None = None
    log_loss: float | None = None
    roc_auc: float | None = None
    # reliability: (mean predicted p, observed pass rate, outcomes) per bin of predictions
    bins: list[tuple[float, float, int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "folds": self.folds,
            "brier": self.brier,
            "log_loss": self.log_loss,
            "roc_auc": self.roc_auc,
            "reliability": [list(b) for b in self.bins],
        }


def fit_student(
    x: np.ndarray, y: np.ndarray, features: list[str], *, seed: int = 0
) -> tuple[StudentModel, Calibration]:
    """Fit p(student passes) on rows `x` (feature values) and verified outcomes `y` (1 pass).

    One BLAS thread: the problems are tiny (outcomes x ~10 features), and on a busy machine
    BLAS threads fighting for cores made each fit ~7x slower (measured: 0.116 s -> 0.016 s)."""
    with threadpool_limits(1):
        return _fit_student(x, y, features, seed=seed)


def _fit_student(
    x: np.ndarray, y: np.ndarray, features: list[str], *, seed: int
) -> tuple[StudentModel, Calibration]:
    y = np.asarray(y, dtype=int)
    passed, n = int(y.sum()), len(y)
    if n == 0:
        raise FitError("no student outcomes to fit on")
    if passed in (0, n):
        which = "passed" if passed else "failed"
        raise FitError(
            f"all {n} verified student outcomes {which}: one class only, so nothing tells "
            "which tasks the student fails; fit on runs with both outcomes, or use no model "
            "file (the router's prior)"
        )
    rarer = min(passed, n - passed)
    folds = min(MAX_FOLDS, rarer)
    base = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
    split = StratifiedKFold(folds, shuffle=True, random_state=seed) if folds >= 2 else None
    if n >= MIN_TO_CALIBRATE and rarer >= MIN_PER_CLASS_TO_CALIBRATE:
        method = "sigmoid"  # never isotonic: see the module docstring
        estimator: Any = CalibratedClassifierCV(base, method=method, cv=split, ensemble=False)
        estimator.fit(x, y)
        inner = estimator.calibrated_classifiers_[0]
        pipe, platt = inner.estimator, inner.calibrators[0]
        # scikit-learn's _SigmoidCalibration: p = expit(-(a * score + b)), as a logistic
        calibrator = _logistic(np.array([-platt.a_]), -platt.b_)
    else:
        method, estimator = "none", base
        pipe, calibrator = base.fit(x, y), None
    model = _from_pipeline(pipe, features, method, calibrator)
    return model, _calibration(estimator, x, y, method, split, folds)


def _from_pipeline(
    pipe: Pipeline, features: list[str], method: str, calibrator: Any
) -> StudentModel:
    scaler, logistic = pipe.named_steps["standardscaler"], pipe.named_steps["logisticregression"]
    return StudentModel(features, scaler, logistic, method, calibrator)


def _calibration(
    estimator: Any, x: np.ndarray, y: np.ndarray, method: str, split: Any, folds: int
) -> Calibration:
    """The figures of `estimator` refitted fold by fold, scored on each held-out fold."""
    if split is None:
        return Calibration(method, None)
    p = cross_val_predict(clone(estimator), x, y, cv=split, method="predict_proba")[:, 1]
    true, pred = calibration_curve(y, p, n_bins=5, strategy="quantile")
    # the outcomes per bin, binned as calibration_curve bins them (it returns no counts)
    edges = np.percentile(p, np.linspace(0, 100, 6))
    counts = np.bincount(np.searchsorted(edges[1:-1], p), minlength=5)
    counts = counts[counts > 0]
    bins = [
        (round(float(a), 4), round(float(b), 4), int(c))
        for a, b, c in zip(pred, true, counts, strict=False)
    ]
    return Calibration(
        method,
        folds,
        brier=round(float(brier_score_loss(y, p)), 4),
        log_loss=round(float(log_loss(y, p, labels=[0, 1])), 4),
        roc_auc=round(float(roc_auc_score(y, p)), 4),
        bins=bins,
    )


def _logistic(coef: np.ndarray, intercept: float) -> LogisticRegression:
    """A binary LogisticRegression holding given coefficients (as fitting would leave it)."""
    model = LogisticRegression()
    model.coef_ = np.asarray(coef, dtype=float).reshape(1, -1)
    model.intercept_ = np.array([float(intercept)])
    model.classes_ = np.array([0, 1])
    model.n_features_in_ = model.coef_.shape[1]
    return model


def _array(values: Any, length: int | None = None) -> np.ndarray:
    out = np.asarray(values, dtype=float).reshape(-1)
    if length is not None and len(out) != length:
        raise ValueError(f"expected {length} numbers, found {len(out)}")
    if not np.all(np.isfinite(out)):
        raise ValueError("a number that is not finite")
    return out


def _list(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values).reshape(-1)]
