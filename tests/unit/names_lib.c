/* Names for test_symbols' demangling and alias tests: functions named by
 * asm labels as C++ and Rust compilers name them, an alias, and a symbol
 * with two versions (names_lib.map). Built into a stripped library: its
 * .dynsym and .gnu.version are all that is read. */
int cxx_fn(int x) __asm__("_ZN2ns3fooISt6vectorIiSaIiEEEEvT_");
int rust_legacy(int x) __asm__("_ZN4core3fmt9Formatter3pad17h0d2e1c0a2a5c8f1bE");
int rust_v0(int x) __asm__("_RNvNtCs1234_7mycrate3foo3bar");
int plain_fn(int x);
int new_free(int x);
int impl_free(int x) __attribute__((alias("new_free")));
int old_free(int x);

int cxx_fn(int x)
{
	return x + 1;
}

int rust_legacy(int x)
{
	return x + 2;
}

int rust_v0(int x)
{
	return x + 3;
}

int plain_fn(int x)
{
	return x + 4;
}

int new_free(int x)
{
	return x + 5;
}

int old_free(int x)
{
	return x + 6;
}

__asm__(".symver new_free,vfree@@V_2");
__asm__(".symver old_free,vfree@V_1");
