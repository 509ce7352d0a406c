/* The exported model on a Cortex-M: scores and predicts the stored test rows (test_rows.h, written
 * with the host's outputs by lastedge.export.c_emulate), prints each row's results and the stack
 * the model used, and exits with the number of rows whose results differ from the host's. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lastedge.h"
#include "test_rows.h"

#ifndef PROBE
#define PROBE 8192u /* bytes of stack painted below the caller's frame */
#endif
#define PAINT 0xA5u

static void run_first_row(void)
{
    (void)lastedge_predict(test_rows[0]);
}

/* The most stack one call of run() took: paint PROBE bytes below the stack pointer, call it,
 * and find the lowest byte it changed. Interrupts are off, so nothing else writes there. */
static uint32_t __attribute__((noinline)) stack_used(void (*run)(void))
{
    uint8_t *sp, *p;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (p = sp - PROBE; p < sp - 8; ++p) *(volatile uint8_t *)p = PAINT;
    run();
    for (p = sp - PROBE; p < sp && *(volatile uint8_t *)p == PAINT; ++p) continue;
    return (uint32_t)(sp - p);
}

int main(void)
{
    int row, c, differ = 0;
    printf("stack %lu of %lu\n", (unsigned long)stack_used(run_first_row), (unsigned long)PROBE);
    for (row = 0; row < TEST_ROWS; ++row) {
        TEST_SCORE scores[LASTEDGE_N_OUTPUTS];
        uint32_t bits[LASTEDGE_N_OUTPUTS];
        const int label = lastedge_predict(test_rows[row]);
        lastedge_scores(test_rows[row], scores);
#if defined(LASTEDGE_SCORE_SCALE) /* integer models: the integer entry point gives the same scores */
        {
            LASTEDGE_INPUT q[LASTEDGE_N_FEATURES];
            int32_t again[LASTEDGE_N_OUTPUTS];
            lastedge_quantize(test_rows[row], q);
            lastedge_scores_q(q, again);
            differ += memcmp(again, scores, sizeof again) != 0 || lastedge_predict_q(q) != label;
        }
#endif
        memcpy(bits, scores, sizeof bits);
        printf("row %d %d", row, label);
        for (c = 0; c < LASTEDGE_N_OUTPUTS; ++c) printf(" %08lx", (unsigned long)bits[c]);
        printf("\n");
        differ += label != expected_labels[row] || memcmp(bits, expected_bits[row], sizeof bits) != 0;
    }
    printf("differ %d of %d\n", differ, TEST_ROWS);
    return differ;
}
