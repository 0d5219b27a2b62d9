/* Test workloads: CPU burned in known proportions. */
#ifndef WORK_H
#define WORK_H
void lib_spin(unsigned long units); /* in libwork.so */
void lib_nop(void);
#endif
