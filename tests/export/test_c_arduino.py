"""examples/mcu's Arduino sketch compiles against the exported files and classifies what the
serial port sends (host g++, with a stand-in for Arduino.h)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from lastedge.export.c import build_c
from lastedge.export.c_parity import HOST_FLAGS, compiler, run_c

SKETCH = Path(__file__).resolve().parents[2] / "examples" / "mcu" / "arduino" / "lastedge_classify"
ARDUINO_H = r"""#include <cstdio>
#include <cstdlib>
struct SerialPort {
    const char *input;
    void begin(long) {}
    int available() { return *input != 0; }
    float parseFloat() {
        char *end;
        float v = std::strtof(input, &end);
        for (input = end; *input == ',' || *input == ' ' || *input == '\n'; ++input) {}
        return v;
    }
    void print(const char *text) { std::fputs(text, stdout); }
    void print(unsigned long value) { std::printf("%lu", value); }
    void println(const char *text) { std::puts(text); }
};
extern SerialPort Serial;
inline unsigned long micros() { return 0; }
"""


def test_the_sketch_classifies_rows_from_the_serial_port(digits_case, tmp_path):
    model, X_train, _, X_test, _ = digits_case()
    c_model = build_c(model, precision="int8", calibration=X_train)
    c_model.write(tmp_path)
    shutil.copy(SKETCH / "lastedge_classify.ino", tmp_path / "sketch.cpp")
    (tmp_path / "Arduino.h").write_text(ARDUINO_H)
    rows = "".join(",".join(f"{v:g}" for v in row) + "\\n" for row in X_test[:5])  # C escapes
    (tmp_path / "main.cpp").write_text(
        f'#include "Arduino.h"\n#include "sketch.cpp"\nSerialPort Serial = {{"{rows}"}};\n'
        "int main() { setup(); while (Serial.available()) loop(); return 0; }\n")
    subprocess.run([compiler(), *HOST_FLAGS, "-c", "lastedge.c"], cwd=tmp_path, check=True)
    subprocess.run(["g++", "-Wall", "-Werror", "-o", "sketch", "main.cpp", "lastedge.o"], cwd=tmp_path,
                   check=True)
    out = subprocess.run(["./sketch"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    labels = [line.split(" in ")[0] for line in out.splitlines()]
    assert labels == [str(label) for label in model.classes[run_c(c_model, X_test[:5])["labels"]]]
