/*
 * falloc_cmd.c --- fallocate [-k] [-z] [-p] [-u] PATH OFF LEN: the modes
 * of fallocate(2) (extref_fallocate), in bytes.  cmds.c has already
 * checked -w and the tree.
 */
#include "debugfs.h"

int impl_fallocate(struct cmd_args *a)
{
	ext2_ino_t ino;
	__u64 off, len;
	int mode = 0;
	errcode_t err;

	if (a->opts['k'])
		mode |= EXTREF_FALLOC_KEEP_SIZE;
	if (a->opts['z'])
		mode |= EXTREF_FALLOC_ZERO_RANGE;
	if (a->opts['p'])
		mode |= EXTREF_FALLOC_PUNCH_HOLE;
	if (a->opts['u'])
		mode |= EXTREF_FALLOC_UNSHARE_RANGE;
	if (resolve_path(a, a->argv[0], &ino) ||
	    parse_num_arg(a, a->argv[1], "offset", &off) ||
	    parse_num_arg(a, a->argv[2], "length", &len))
		return 1;
	err = extref_fallocate(sh.xfs, ino, mode, off, len);
	if (err)
		return cmd_err_class(a, err, "%s", a->argv[0]);
	return 0;
}
