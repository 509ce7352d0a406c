"""The SGD baseline's closed-form steps against the autograd + ``torch.optim`` steps they replaced:
the same fit up to floating-point rounding."""

import numpy as np
import pytest
import torch

from lastedge.train import SGDSoftThresholdClassifier, objective, sgd
from lastedge.train.solvers import minibatch_indices


def autograd_descend(self, Z, targets, groups, U0, v0, step, r, mu, n_iter, seed, progress, watch):
    """The baseline's former descent: autograd of the minibatch objective, ``torch.optim``'s steps
    (U's step and Adam's eps following the rows' scale ``r``); no records, no monitor."""
    U, v = U0.clone().requires_grad_(True), v0.clone().requires_grad_(True)
    if self.optimizer == "adam":
        optim = torch.optim.Adam([{"params": [U], "lr": step / r, "eps": sgd.ADAM_EPS * r},
                                  {"params": [v]}], lr=step, eps=sgd.ADAM_EPS)
    else:
        optim = torch.optim.SGD([{"params": [U], "lr": step / r**2}, {"params": [v]}], lr=step)
    m = Z.shape[0]
    for rows in minibatch_indices(m, min(self.batch_size, m), n_iter, torch.Generator().manual_seed(seed),
                                  Z.device):
        loss = objective.hinge_losses(Z[rows], targets[:, rows], U, v, groups, self.beta).mean(1)
        loss = (loss + objective.regulariser(U, v, self.nu, mu) / m).sum()
        optim.zero_grad()
        loss.backward()
        optim.step()
        with torch.no_grad():
            v.clamp_(min=self.eps)
    return sgd._Run(U.detach(), v.detach(), [], n_iter, stopped=False)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("classes", [2, 4])  # one binary head, four one-vs-all heads
def test_closed_form_steps_give_the_autograd_fit(digits, monkeypatch, optimizer, classes):
    X, y, X_test, y_test = digits
    train, test = y < classes, y_test < classes
    params = dict(n_atoms=8, optimizer=optimizer, max_iter=400, nu=0.5, mu=1e-2,
                  step_sizes=(0.01,) if optimizer == "adam" else (0.1,), verbose=0, random_state=0)
    fast = SGDSoftThresholdClassifier(**params).fit(X[train], y[train])
    monkeypatch.setattr(SGDSoftThresholdClassifier, "_descend", autograd_descend)
    reference = SGDSoftThresholdClassifier(**params).fit(X[train], y[train])
    assert fast.score(X_test[test], y_test[test]) > 0.8  # a trained classifier, not a trivial one
    assert np.mean(fast.predict(X_test[test]) == reference.predict(X_test[test])) >= 0.99
    scale = np.abs(reference.dictionary_).max()
    np.testing.assert_allclose(fast.dictionary_, reference.dictionary_, rtol=0, atol=1e-4 * scale)
    np.testing.assert_allclose(fast.coef_, reference.coef_, rtol=0, atol=1e-4 * np.abs(reference.coef_).max())
