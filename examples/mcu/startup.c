/* Minimal Cortex-M startup for QEMU's boards: a vector table, .data copied and .bss zeroed, the
 * FPU switched on where there is one, newlib's semihosting set up, then exit(main()), so QEMU's
 * exit status is main's. */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
extern void initialise_monitor_handles(void);
extern void _exit(int status);
int main(void);
void Reset_Handler(void);
void Fault_Handler(void);

__attribute__((section(".vectors"), used))
static void (*const vectors[16])(void) = {
    (void (*)(void))_estack, Reset_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, 0, 0, 0, 0, Fault_Handler, Fault_Handler, 0, Fault_Handler,
    Fault_Handler,
};

void Reset_Handler(void)
{
    uint32_t *src = _sidata, *dst = _sdata;
    while (dst < _edata) *dst++ = *src++;
    for (dst = _sbss; dst < _ebss;) *dst++ = 0;
#if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20; /* CPACR: full access to CP10 and CP11 */
    __asm__ volatile("dsb\n\tisb");
#endif
    initialise_monitor_handles();
    exit(main());
}

void Fault_Handler(void)
{
    _exit(99); /* a fault ends the run with status 99 rather than hanging it */
}

void _init(void) {}
void _fini(void) {}
