"""A cross-validated grid search whose log-spaced grids widen while the best value sits on an edge."""

from __future__ import annotations

import numpy as np
import sklearn
from sklearn.model_selection import GridSearchCV, train_test_split

CV_FOLDS = 3


class WidenedGridSearch:
    """``GridSearchCV`` over log-spaced grids that widens any grid whose best value is on its edge.

    Each widening adds two more decades on the side of the edge; after ``max_widenings`` the search
    stops and ``on_edge_`` says whether the best is still on an edge.
    """

    def __init__(self, estimator, grid: dict[str, list[float]], max_widenings: int = 3,
                 cv_rows: int | None = None, seed: int = 0):
        self.estimator, self.grid, self.max_widenings = estimator, grid, max_widenings
        self.cv_rows, self.seed = cv_rows, seed

    def fit(self, X: np.ndarray, y: np.ndarray) -> WidenedGridSearch:
        grid = {name: sorted(values) for name, values in self.grid.items()}
        X_cv, y_cv = X, y
        if self.cv_rows is not None and self.cv_rows < len(y):
            X_cv, _, y_cv, _ = train_test_split(X, y, train_size=self.cv_rows, stratify=y,
                                                random_state=self.seed)
        for _ in range(self.max_widenings + 1):
            search = GridSearchCV(self.estimator, grid, cv=CV_FOLDS, refit=X_cv is X).fit(X_cv, y_cv)
            edges = {name: _edge(values, search.best_params_[name]) for name, values in grid.items()}
            if not any(edges.values()):
                break
            for name, side in edges.items():
                if side:
                    grid[name] = _widen(grid[name], side)
        self.best_params_ = search.best_params_
        self.best_estimator_ = (search.best_estimator_ if X_cv is X else
                                sklearn.clone(self.estimator).set_params(**self.best_params_).fit(X, y))
        self.grid_ = grid
        self.on_edge_ = any(edges.values())
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.best_estimator_.predict(X)

    def feature_sparsity(self, X: np.ndarray) -> float:
        return self.best_estimator_.feature_sparsity(X)

    def notes(self) -> str:
        chosen = ", ".join(f"{name.split('__')[-1]}={value:g}" for name, value in self.best_params_.items())
        subset = f" (CV on {self.cv_rows} rows)" if self.cv_rows else ""
        return chosen + (" (on the grid's edge)" if self.on_edge_ else "") + subset


def _edge(values: list[float], best: float) -> str | None:
    return "low" if best == values[0] else "high" if best == values[-1] else None


def _widen(values: list[float], side: str) -> list[float]:
    if side == "low":
        return [values[0] / 100, values[0] / 10] + values
    return values + [values[-1] * 10, values[-1] * 100]
