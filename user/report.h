/* bpftrace-rec report [DIR]: a recording read with nothing but this tool
 * (Debian packages no pprof), as perf report --stdio reads perf.data: the
 * profile's top functions per sample type and per process
 * (formats/report.c), read by formats/pprof_in.c. */
#ifndef USER_REPORT_H
#define USER_REPORT_H

/* argv[0] is "report". The exit status: 0, 1 on an error (one line naming
 * the input and the reason), 64 on a usage error. */
int report_main(int argc, char **argv);

#endif
