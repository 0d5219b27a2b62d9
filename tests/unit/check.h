/* Minimal unit-test harness: each test prints "PASS name" or "FAIL name";
 * tests/run.sh counts those lines. A failed CHECK names file, line and the
 * condition, and the test goes on so one run shows every failure. */
#ifndef TESTS_UNIT_CHECK_H
#define TESTS_UNIT_CHECK_H

#include <stdio.h>

static int check_failures;     /* in the current test */
static int check_tests_failed; /* over the program */

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);   \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

/* CHECK with a printf-style explanation of the values involved. */
#define CHECKF(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define RUN_TEST(fn)                                                                               \
	do {                                                                                       \
		check_failures = 0;                                                                \
		fn();                                                                              \
		printf("%s %s\n", check_failures ? "FAIL" : "PASS", #fn);                          \
		fflush(stdout);                                                                    \
		if (check_failures)                                                                \
			check_tests_failed++;                                                      \
	} while (0)

/* Skip a test with a reason; counted as skipped, not passed. */
#define SKIP_TEST(fn, why) printf("SKIP %s: %s\n", #fn, why)

#define CHECK_EXIT() return check_tests_failed ? 1 : 0

#endif
