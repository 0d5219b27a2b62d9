/* test_cfi_table's library whose only CFI is .debug_frame: the Makefile
 * builds it with -fno-asynchronous-unwind-tables -nostdlib. Locals make
 * each function move its CFA, so the table has rows beyond the entry's. */
int cfi_dfb(int x);

__attribute__((noinline)) int cfi_dfa(int x)
{
	volatile int v[8] = {x};

	return cfi_dfb(v[0]) + v[7];
}

__attribute__((noinline)) int cfi_dfb(int x)
{
	volatile int v[3] = {x};

	return v[0] * 3 + v[2];
}
