/*
 * rebuild_fault.c --- fsck.extref's repair core (extref_fsck, mode YES)
 * on an image opened under the fault-injecting io manager, so that the
 * crash tests can stop the tree's rebuild (tree/stage.c) after any write.
 *
 * usage: rebuild_fault IMAGE   with EXTREF_FAULT (and EXTREF_FAULT_OUT)
 *                              set as for the other tools (faultio.c)
 *
 * Exit 0 when the check and its repairs ran (whatever they found), 1
 * with "rebuild_fault: MESSAGE" on stderr when it failed, 2 on usage.
 * Built without configure --enable-fault-injection, it says so and exits
 * 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include "extref_fsck.h"
#include "tree/extref_int.h"	/* extref_fault_io_manager */

#ifdef EXTREF_FAULT_INJECTION

static void quiet(const struct extref_problem_report *r, void *priv)
{
	(void)r;
	(void)priv;
}

int main(int argc, char **argv)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_YES,
				      .report = quiet };
	struct extref_fsck_result res;
	ext2_filsys fs;
	errcode_t err, cerr;

	if (argc != 2) {
		fprintf(stderr, "usage: rebuild_fault IMAGE\n");
		return 2;
	}
	err = ext2fs_open2(argv[1], NULL, EXT2_FLAG_RW | EXT2_FLAG_64BITS,
			   0, 0, extref_fault_io_manager, &fs);
	if (err) {
		fprintf(stderr, "rebuild_fault: %s: %s\n", argv[1],
			error_message(err));
		return 1;
	}
	err = extref_fsck(fs, &o, &res);
	cerr = ext2fs_close_free(&fs);
	if (err || cerr) {
		fprintf(stderr, "rebuild_fault: %s\n",
			error_message(err ? err : cerr));
		return 1;
	}
	return 0;
}

#else /* !EXTREF_FAULT_INJECTION */

int main(void)
{
	fprintf(stderr, "rebuild_fault: built without fault injection\n");
	return 77;
}

#endif
