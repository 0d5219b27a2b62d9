/* Waits known by construction, for --off-cpu (tests/integration/test_offcpu.sh).
 *
 * waits: the main thread burns 1 s of CPU in burn_cpu, sleeps 2 s in
 * nanosleep called from sleep_wait, then blocks on a pipe read in pipe_wait
 * until a second thread (writer), asleep until 4 s after the start, writes:
 * about 1 s.
 * futex: two threads (locker) take one mutex in take_lock for 2 s, each
 * holding it ~1 ms of CPU: each waits for the other in pthread_mutex_lock.
 * callers: the main thread blocks on a pipe read in read_a until 0.5 s,
 * then in read_b until 1.5 s: two call paths with the same user ip, sp, bp
 * and system call, which differ only in their return addresses.
 * repeat: the main thread blocks 300 times on a pipe read in read_heap,
 * each time with another heap block's address in its frame; a second
 * thread writes every 2 ms: one stack, however often it waits.
 * pollwork: 150 times, poll_wait blocks 10 ms in poll, then work burns
 * 4 ms of CPU, both called from poll_loop: XRay timelines after a wait. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static struct timespec t0;
static int fds[2], fds_a[2], fds_b[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

static double since_start(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

static void __attribute__((noinline)) spin_until(double s)
{
	while (since_start() < s)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

static void __attribute__((noinline)) burn_cpu(void)
{
	spin_until(1.0);
}

static void __attribute__((noinline)) sleep_wait(void)
{
	struct timespec ts = {2, 0};

	nanosleep(&ts, NULL);
}

static void __attribute__((noinline)) pipe_wait(void)
{
	char c;

	if (read(fds[0], &c, 1) != 1)
		perror("read");
}

static void *writer(void *arg)
{
	struct timespec at = {t0.tv_sec + 4, t0.tv_nsec};

	(void)arg;
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
	if (write(fds[1], "x", 1) != 1)
		perror("write");
	return NULL;
}

/* The same frame as read_b's: only the pipe differs. */
static void __attribute__((noinline)) read_a(void)
{
	char c;

	if (read(fds_a[0], &c, 1) != 1)
		perror("read");
}

static void __attribute__((noinline)) read_b(void)
{
	char c;

	if (read(fds_b[0], &c, 1) != 1)
		perror("read");
}

static void write_at(int fd, double s)
{
	struct timespec at = {t0.tv_sec + (time_t)s, t0.tv_nsec + (long)((s - (time_t)s) * 1e9)};

	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
	if (write(fd, "x", 1) != 1)
		perror("write");
}

static void *writer_ab(void *arg)
{
	(void)arg;
	write_at(fds_a[1], 0.5);
	write_at(fds_b[1], 1.5);
	return NULL;
}

#define REPEATS 300

/* The block's address in the frame, near sp, where the heuristic key
 * hashed every word that looked like a code address. */
static void __attribute__((noinline)) read_heap(void *block)
{
	void *volatile keep[2] = {block, block};
	char c;

	if (read(fds[0], &c, 1) != 1)
		perror("read");
	sink += (unsigned long)keep[0] & 1;
}

static void __attribute__((noinline)) poll_wait(void)
{
	poll(NULL, 0, 10);
}

static void __attribute__((noinline)) work(void)
{
	spin_until(since_start() + 0.004);
}

static void __attribute__((noinline)) poll_loop(void)
{
	for (int i = 0; i < 150; i++) {
		poll_wait();
		work();
	}
}

static void *repeat_writer(void *arg)
{
	struct timespec ts = {0, 2000000};

	(void)arg;
	for (int i = 0; i < REPEATS; i++) {
		/* After the first wait, 0.6 s: the recorder unwinds that stack
		 * at its next drain (every 0.25 s at most) and keys the place
		 * by its return addresses from then on; the test counts the
		 * stacks walked after that, not how fast the drain came. */
		if (i == 1)
			nanosleep(&(struct timespec){0, 600000000}, NULL);
		nanosleep(&ts, NULL);
		if (write(fds[1], "x", 1) != 1)
			perror("write");
	}
	return NULL;
}

static void __attribute__((noinline)) take_lock(double hold, double end)
{
	while (since_start() < end) {
		double t;

		pthread_mutex_lock(&mu);
		t = since_start() + hold;
		spin_until(t);
		pthread_mutex_unlock(&mu);
	}
}

static void *locker(void *arg)
{
	(void)arg;
	take_lock(0.001, 2.0);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (argc > 1 && !strcmp(argv[1], "futex")) {
		pthread_create(&a, NULL, locker, NULL);
		pthread_create(&b, NULL, locker, NULL);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "pollwork")) {
		poll_loop();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "callers")) {
		if (pipe(fds_a) || pipe(fds_b))
			return 1;
		pthread_create(&a, NULL, writer_ab, NULL);
		read_a();
		read_b();
		pthread_join(a, NULL);
		return 0;
	}
	if (pipe(fds))
		return 1;
	if (argc > 1 && !strcmp(argv[1], "repeat")) {
		static void *blocks[REPEATS];

		struct rusage r0, r1;

		pthread_create(&a, NULL, repeat_writer, NULL);
		getrusage(RUSAGE_THREAD, &r0);
		for (int i = 0; i < REPEATS; i++)
			read_heap(blocks[i] = malloc(4096 + 64 * i));
		getrusage(RUSAGE_THREAD, &r1);
		pthread_join(a, NULL);
		/* The reads that blocked, by the kernel's count of this
		 * thread's voluntary switches: a read finding the byte already
		 * there (the reader preempted past the writer's next write, on
		 * a loaded machine) does not wait. */
		printf("blocked %ld\n", r1.ru_nvcsw - r0.ru_nvcsw);
		return 0;
	}
	pthread_create(&a, NULL, writer, NULL);
	burn_cpu();
	sleep_wait();
	pipe_wait();
	pthread_join(a, NULL);
	return 0;
}
