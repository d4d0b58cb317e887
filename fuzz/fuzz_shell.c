/*
 * fuzz_shell.c --- libFuzzer target: command lines for debugfs.extref's
 * request executor (libss's parsing, then cmds.c's option and argument
 * checks, then the command), on a small image opened read-write in a
 * memory file, fresh for every input: the image of fuzz/mkseeds.py
 * (seeds/shell.img beside the target's directory, or $FUZZ_SHELL_IMAGE).
 *
 * The input is up to 8 lines, run in order.  The request table is
 * shell_cmds.ct, made by debug/gen_cmds.awk from debug/commands.def: every
 * request but those naming a host file (flag "host": open, dump, rdump,
 * write); pwrite -i (a host file too) is skipped here, as is a line
 * starting with '!' (libss runs it with system()).
 */
#include <stdlib.h>
#include <string.h>
#include <ss/ss.h>
#include "fz.h"
#include "../debug/debugfs.h"

/* libss exports these without declaring them in ss.h. */
char **ss_parse(int sci_idx, char *line_ptr, int *argc_ptr);

extern ss_request_table fuzz_shell_cmds;

#define MAX_LINES	8
#define MAX_LINE	512

static char image[4096];

static void init(void)
{
	const char *env = getenv("FUZZ_SHELL_IMAGE");
	int ret;

	fz_init();
	if (image[0])
		return;
	if (env && *env)
		snprintf(image, sizeof(image), "%s", env);
	else if (fz_seed_path("shell.img", image, sizeof(image)))
		abort();
	sh.sci_idx = ss_create_invocation(PROG_NAME, "fuzz", NULL,
					  &fuzz_shell_cmds, &ret);
	if (ret)
		abort();
}

/* Non-zero when argv has an option cluster holding letter c. */
static int has_opt(char **argv, int argc, char c)
{
	int i;

	for (i = 1; i < argc; i++)
		if (argv[i][0] == '-' && strchr(argv[i], c))
			return 1;
	return 0;
}

/* Lines that must not run: see the head comment. */
static int skip_line(const char *line)
{
	char *copy;
	char **argv;
	int argc, skip = 0;

	while (*line == ' ' || *line == '\t')
		line++;
	if (*line == '!')
		return 1;
	copy = strdup(line);
	if (!copy)
		abort();
	argv = ss_parse(sh.sci_idx, copy, &argc);
	if (argv && argc > 0) {
		if (!strcmp(argv[0], "pwrite") && has_opt(argv, argc, 'i'))
			skip = 1;
	}
	free(argv);
	free(copy);
	return skip;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	char line[MAX_LINE];
	size_t pos = 0, n;
	int lines = 0;

	init();
	fz_image_copy(image, &img);
	if (shell_open(img.path, 1, 0, PROG_NAME))
		abort();	/* the seed image, not the input */
	while (pos < size && lines++ < MAX_LINES) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);

		n = (nl ? (size_t)(nl - data) : size) - pos;
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, data + pos, n);
		line[n] = 0;
		pos = nl ? (size_t)(nl - data) + 1 : size;
		if (strlen(line) != n || skip_line(line))
			continue;	/* a NUL inside, or not allowed */
		ss_execute_line(sh.sci_idx, line);
	}
	shell_close(PROG_NAME);
	sh.failed = 0;
	return 0;
}
