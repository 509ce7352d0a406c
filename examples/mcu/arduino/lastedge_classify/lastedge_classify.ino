// Classify rows sent over the serial port with a lastedge model exported as C:
//   lastedge export model.npz --format c --out lastedge_classify --precision int8 --calibration digits
// puts lastedge.h and lastedge.c beside this sketch; the Arduino IDE compiles them with it.
// Send one row as LASTEDGE_N_FEATURES numbers (separated by commas or spaces) per line; the
// sketch answers with the predicted label and the microseconds the prediction took.
#include "lastedge.h"

static float row[LASTEDGE_N_FEATURES];

void setup() {
  Serial.begin(115200);
}

void loop() {
  if (Serial.available() <= 0) return;
  for (int i = 0; i < LASTEDGE_N_FEATURES; ++i) row[i] = Serial.parseFloat();
  const unsigned long start = micros();
  const int index = lastedge_predict(row);
  const unsigned long took = micros() - start;
  Serial.print(lastedge_label(index));
  Serial.print(" in ");
  Serial.print(took);
  Serial.println(" us");
}
