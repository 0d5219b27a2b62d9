/* The README's ./myprog: parse_header and parse_body do 1:3 of the work
 * for 2 s; libssl is linked and initialized, so -t libssl.so.3:SSL_read
 * has a library to probe. */
#include <time.h>
int OPENSSL_init_ssl(unsigned long long opts, const void *settings);
__attribute__((noinline)) unsigned parse_header(unsigned x)
{
	for (int i = 0; i < 2000000; i++)
		x = x * 1103515245u + 12345u;
	return x;
}
__attribute__((noinline)) unsigned parse_body(unsigned x)
{
	for (int i = 0; i < 6000000; i++)
		x = x * 1103515245u + 12345u;
	return x;
}
volatile unsigned sink; /* the calls are kept: their result is used */
int main(void)
{
	unsigned x = 1;
	time_t end = time(NULL) + 2;

	OPENSSL_init_ssl(0, 0);
	while (time(NULL) < end)
		x = parse_body(parse_header(x));
	sink = x;
	return 0;
}
