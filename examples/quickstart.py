"""Quickstart: train LAST on digits, save, load, predict; then export, run and benchmark the files.

    python examples/quickstart.py      # about 20 s on 2 cores; writes digits.* in the current folder
"""

import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from lastedge.export import to_onnx, to_tflite
from lastedge.runtime import Model, bench, format_table, load
from lastedge.train import LASTClassifier

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)

warnings.simplefilter("ignore", ConvergenceWarning)  # 3 DCA iterations are enough for digits
clf = LASTClassifier(n_atoms=20, preprocess="center-l2", max_dca_iter=3, inner_solver="adam",
                     inner_iter=200, random_state=0)
clf.fit(X_train, y_train)
print(f"test accuracy {clf.score(X_test, y_test):.2%}, trained in {clf.fit_time_:.1f} s, "
      f"{clf.feature_sparsity(X_test):.0%} of the features are zero")

model = clf.to_model()
model.save("digits.npz")
model = Model.load("digits.npz")
print("predicted", model.predict(X_test[:10]), "true", y_test[:10])

# The tour: export to ONNX and TFLite, run a file on its interpreter, benchmark all three.
to_onnx(model, "digits.onnx")
to_tflite(model, "digits.tflite")
p = load("digits.tflite")
print("accuracy", (p.predict(X_test) == y_test).mean())
rows = bench(["digits.npz", "digits.onnx", "digits.tflite"], batch_sizes=(1, 64), runs=200)
print(format_table(rows))
