/*
 * flags_cmd.c --- chattr and lsattr: an inode's flags as chattr(1) and
 * lsattr(1) change and show them (extref_set_flags, extref_get_flags).
 * cmds.c has already checked -w and the tree for chattr.
 */
#include <stdio.h>
#include <string.h>
#include <e2p/e2p.h>
#include "debugfs.h"

/* chattr(1)'s letters. */
static const struct {
	char	letter;
	__u32	flag;
} letters[] = {
	{ 's', EXT2_SECRM_FL }, { 'u', EXT2_UNRM_FL },
	{ 'c', EXT2_COMPR_FL }, { 'S', EXT2_SYNC_FL },
	{ 'i', EXT2_IMMUTABLE_FL }, { 'a', EXT2_APPEND_FL },
	{ 'd', EXT2_NODUMP_FL }, { 'A', EXT2_NOATIME_FL },
	{ 'j', EXT3_JOURNAL_DATA_FL }, { 't', EXT2_NOTAIL_FL },
	{ 'D', EXT2_DIRSYNC_FL }, { 'T', EXT2_TOPDIR_FL },
	{ 'e', EXT4_EXTENTS_FL }, { 'x', 0x02000000 /* DAX */ },
	{ 'F', 0x40000000 /* casefold */ },
	{ 'P', EXT4_PROJINHERIT_FL },
};

static int letter_flag(char c, __u32 *flag)
{
	size_t i;

	for (i = 0; i < sizeof(letters) / sizeof(letters[0]); i++)
		if (letters[i].letter == c) {
			*flag = letters[i].flag;
			return 0;
		}
	return 1;
}

/* MODE (+LETTERS, -LETTERS, =LETTERS, each as often as wanted) applied
 * to *flags. */
static int apply_mode(struct cmd_args *a, const char *mode, __u32 *flags)
{
	__u32 add = 0, del = 0, set = 0, f;
	int op = 0, eq = 0;
	const char *p;

	for (p = mode; *p; p++) {
		if (*p == '+' || *p == '-' || *p == '=') {
			op = *p;
			eq |= op == '=';
			continue;
		}
		if (!op || letter_flag(*p, &f))
			return cmd_fail(a, "bad mode (+-=[aAcdDeFijPsStTux]): %s",
					mode);
		if (op == '+')
			add |= f;
		else if (op == '-')
			del |= f;
		else
			set |= f;
	}
	if (!op)
		return cmd_fail(a, "bad mode (+-=[aAcdDeFijPsStTux]): %s", mode);
	if (eq)
		*flags = set | (*flags & (EXT4_EXTENTS_FL | EXT2_INDEX_FL |
					  EXT4_HUGE_FILE_FL |
					  EXT4_INLINE_DATA_FL));
	*flags = (*flags | add) & ~del;
	return 0;
}

/* The inode at argv[0] and its flags; 1 (said) when there is none. */
static int path_flags(struct cmd_args *a, ext2_ino_t *ino, __u32 *flags)
{
	errcode_t err;

	if (resolve_path(a, a->argv[0], ino))
		return 1;
	err = extref_get_flags(sh.xfs, *ino, flags);
	return err ? cmd_err_class(a, err, "%s", a->argv[0]) : 0;
}

/* ----- chattr PATH MODE ----- */

int impl_chattr(struct cmd_args *a)
{
	ext2_ino_t ino;
	__u32 flags;
	errcode_t err;

	if (path_flags(a, &ino, &flags) || apply_mode(a, a->argv[1], &flags))
		return 1;
	err = extref_set_flags(sh.xfs, ino, flags);
	return err ? cmd_err_class(a, err, "%s", a->argv[0]) : 0;
}

/* ----- lsattr PATH ----- */

int impl_lsattr(struct cmd_args *a)
{
	ext2_ino_t ino;
	__u32 flags;

	if (path_flags(a, &ino, &flags))
		return 1;
	print_flags(stdout, flags, 0);
	printf(" %s\n", a->argv[0]);
	return 0;
}
