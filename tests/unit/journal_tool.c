/*
 * journal_tool.c --- drive the journal module (libfs/journal) directly on
 * an image, for tests/test_journal.py.
 *
 * Usage: journal_tool IMAGE commit [-r BLK]... [BLK=HOSTFILE]...
 *		one transaction: each HOSTFILE (one block of bytes) logged
 *		for filesystem block BLK, each -r BLK revoked; not
 *		checkpointed
 *	  journal_tool IMAGE checkpoint	 mark the journal empty
 *	  journal_tool IMAGE recover	 replay; prints "replayed N"
 *	  journal_tool IMAGE capacity [NREVOKE]  prints the blocks one
 *		transaction can log now
 *	  journal_tool IMAGE dirty	 prints 1 when s_start != 0, else 0
 *	  journal_tool IMAGE home [BLK=HOSTFILE]...  write the blocks in
 *		place and flush (what the caller does between commit and
 *		checkpoint)
 * Several commands run in one process (one open journal, so that the
 * log's head moves on past checkpoints) when separated by "+":
 *	  journal_tool IMAGE commit 10=a + checkpoint + commit 11=b
 * The image is opened with libext2fs's unix io manager, or with the
 * fault-injecting one when EXTREF_FAULT is set (crash tests; a build with
 * --enable-fault-injection); the journal gets the image's own channel.  Exits 0, or 1 with the error on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <et/com_err.h>
#include <ext2fs/ext2fs.h>
#include "extref_err.h"
#include "journal/xr_journal.h"
#include "tree/extref_int.h"	/* extref_fault_io_manager */

static const char *prog = "journal_tool";

static int fail(const char *what, errcode_t err)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, error_message(err));
	return 1;
}

static errcode_t read_host(const char *path, unsigned bs, void **ret)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	size_t got;

	if (!f)
		return errno;
	buf = calloc(1, bs);
	got = buf ? fread(buf, 1, bs, f) : 0;
	fclose(f);
	if (!buf)
		return ENOMEM;
	if (got != bs) {
		free(buf);
		return EXT2_ET_SHORT_READ;
	}
	*ret = buf;
	return 0;
}

static int do_commit(ext2_filsys fs, struct xr_journal *j, int argc,
		     char **argv)
{
	struct xr_jblock *b = calloc(argc + 1, sizeof(*b));
	blk64_t *rv = calloc(argc + 1, sizeof(*rv));
	size_t n = 0, nr = 0;
	errcode_t err = 0;
	int i, rc;

	for (i = 0; i < argc && !err; i++) {
		char *eq = strchr(argv[i], '=');

		if (!strcmp(argv[i], "-r") && i + 1 < argc) {
			rv[nr++] = strtoull(argv[++i], NULL, 0);
			continue;
		}
		if (!eq)
			return fail("bad argument", EXT2_ET_INVALID_ARGUMENT);
		b[n].blk = strtoull(argv[i], NULL, 0);
		err = read_host(eq + 1, fs->blocksize, (void **)&b[n].data);
		n++;
	}
	if (!err)
		err = xr_journal_commit(j, b, n, rv, nr);
	rc = err ? fail("commit", err) : 0;
	for (i = 0; i < (int)n; i++)
		free((void *)b[i].data);
	free(b);
	free(rv);
	return rc;
}

static int do_home(ext2_filsys fs, int argc, char **argv)
{
	errcode_t err = 0;
	void *buf;
	int i;

	for (i = 0; i < argc && !err; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq)
			return fail("bad argument", EXT2_ET_INVALID_ARGUMENT);
		err = read_host(eq + 1, fs->blocksize, &buf);
		if (err)
			break;
		err = io_channel_write_blk64(fs->io,
					     strtoull(argv[i], NULL, 0), 1, buf);
		free(buf);
	}
	if (!err)
		err = io_channel_flush(fs->io);
	return err ? fail("home", err) : 0;
}

static int run_one(ext2_filsys fs, struct xr_journal *j, const char *cmd,
		   int argc, char **argv)
{
	errcode_t err;

	if (!strcmp(cmd, "commit"))
		return do_commit(fs, j, argc, argv);
	if (!strcmp(cmd, "home"))
		return do_home(fs, argc, argv);
	if (!strcmp(cmd, "checkpoint")) {
		err = xr_journal_checkpoint_done(j);
		return err ? fail("checkpoint", err) : 0;
	}
	if (!strcmp(cmd, "capacity"))
		printf("%llu\n", (unsigned long long)xr_journal_capacity(j,
			argc ? strtoul(argv[0], NULL, 0) : 0));
	else if (!strcmp(cmd, "dirty"))
		printf("%d\n", xr_journal_dirty(j));
	else
		return fail(cmd, EXT2_ET_INVALID_ARGUMENT);
	return 0;
}

static int run(ext2_filsys fs, int argc, char **argv)
{
	struct xr_journal *j;
	unsigned nt;
	errcode_t err;
	int rc = 0, i, n;

	if (!strcmp(argv[0], "recover")) {
		err = xr_journal_recover(fs, fs->io, 0, &nt);
		if (err)
			return fail("recover", err);
		printf("replayed %u\n", nt);
		return 0;
	}
	err = xr_journal_open(fs, fs->io, &j);
	if (err)
		return fail("open", err);
	for (i = 0; i < argc && !rc; i += n + 1) {
		for (n = 0; i + n < argc && strcmp(argv[i + n], "+"); n++)
			;
		rc = run_one(fs, j, argv[i], n - 1, argv + i + 1);
	}
	xr_journal_close(j);
	return rc;
}

static io_manager io_manager_for_env(void)
{
#ifdef EXTREF_FAULT_INJECTION
	const char *f = getenv("EXTREF_FAULT");

	if (f && *f)
		return extref_fault_io_manager;
#endif
	return unix_io_manager;
}

int main(int argc, char **argv)
{
	ext2_filsys fs;
	errcode_t err;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: %s IMAGE COMMAND [ARGS...]\n", prog);
		return 2;
	}
	add_error_table(&et_xref_error_table);
	initialize_ext2_error_table();
	err = ext2fs_open(argv[1], EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			  io_manager_for_env(), &fs);
	if (err)
		return fail(argv[1], err);
	rc = run(fs, argc - 2, argv + 2);
	ext2fs_free(fs);
	return rc;
}
