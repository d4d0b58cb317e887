/*
 * cpu_time.c --- the time a command takes, wall clock and processor,
 * its children included; the processor time is what a shared machine's
 * other load changes least.
 *
 * usage: cpu_time OUT COMMAND [ARG]...
 *
 * Runs COMMAND (searched in PATH) with our standard input, output and
 * error, waits for it, and writes to the file OUT one line "WALL CPU" in
 * seconds: WALL from just before the spawn to the end of the wait (the
 * command's own start included, not this program's), CPU its user plus
 * system time with every descendant it waited for (getrusage
 * RUSAGE_CHILDREN; mkfs.extref waits for its mke2fs).  The exit status
 * is COMMAND's (128 + N for a signal N).
 */
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define bench_prog_name "cpu_time"
#include "bench_util.h"

extern char **environ;

static double seconds(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	double t0, t1;
	FILE *out;
	pid_t pid;
	int status, err;

	bench_prog = bench_prog_name;
	if (argc < 3) {
		fprintf(stderr, "usage: cpu_time OUT COMMAND [ARG]...\n");
		return 2;
	}
	t0 = now();
	err = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
	if (err) {
		errno = err;
		die_errno(argv[2]);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die_errno("waitpid");
	t1 = now();
	if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
		die_errno("getrusage");
	out = fopen(argv[1], "w");
	if (!out || fprintf(out, "%.6f %.6f\n", t1 - t0,
			    seconds(ru.ru_utime) + seconds(ru.ru_stime)) < 0 ||
	    fclose(out))
		die_errno(argv[1]);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
