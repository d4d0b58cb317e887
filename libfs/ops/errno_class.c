/*
 * errno_class.c --- the errno class of an errcode_t, as the kernel would
 * report the same failure (the shell prints it; tests compare it with the
 * kernel's own answer).
 */
#include <errno.h>
#include "extref_ops_int.h"

static const struct {
	errcode_t	err;
	int		no;
} classes[] = {
	{ EXTREF_ERR_NOT_REG,		EINVAL },
	{ EXTREF_ERR_ALIGN,		EINVAL },
	{ EXTREF_ERR_OVERLAP,		EINVAL },
	{ EXTREF_ERR_PAST_EOF,		EINVAL },
	{ EXTREF_ERR_ZERO_LEN,		EINVAL },
	{ EXTREF_ERR_OFF_RANGE,		EINVAL },
	{ EXTREF_ERR_TAIL_INSIDE,	EINVAL },
	{ EXTREF_ERR_IS_DIR,		EISDIR },
	{ EXTREF_ERR_NOT_DIR,		ENOTDIR },
	{ EXTREF_ERR_EXISTS,		EEXIST },
	{ EXTREF_ERR_DIR_NOT_EMPTY,	ENOTEMPTY },
	{ EXTREF_ERR_ACCESS,		EACCES },
	{ EXTREF_ERR_PERM,		EPERM },
	{ EXTREF_ERR_DQUOT,		EDQUOT },
	{ EXTREF_ERR_READ_ONLY,		EROFS },
	{ EXTREF_ERR_INODE_UNSUPPORTED,	EOPNOTSUPP },
	{ EXTREF_ERR_INTO_ITSELF,	EINVAL },
	{ EXTREF_ERR_DIR_LOOP,		ELOOP },
	{ EXTREF_ERR_MLINK,		EMLINK },
	{ EXTREF_ERR_XDEV,		EXDEV },
	{ EXTREF_ERR_BUSY,		EBUSY },
	{ EXTREF_ERR_MOVE_INTO_ITSELF,	EINVAL },
	{ EXTREF_ERR_BAD_FLAGS,		EINVAL },
	{ EXTREF_ERR_BAD_TYPE,		EINVAL },
	{ EXTREF_ERR_BAD_TIME,		EINVAL },
	{ EXTREF_ERR_BAD_DEV,		EINVAL },
	{ EXTREF_ERR_FALLOC_MODE,	EOPNOTSUPP },
	{ EXTREF_ERR_FLAGS,		EOPNOTSUPP },
	{ EXTREF_ERR_NOT_ORPHAN,	EINVAL },
	{ EXTREF_ERR_ORPHAN_LIST,	EUCLEAN },
	{ EXT2_ET_FILE_TOO_BIG,		EFBIG },
	{ EXT2_ET_BLOCK_ALLOC_FAIL,	ENOSPC },
	{ EXT2_ET_INODE_ALLOC_FAIL,	ENOSPC },
	{ EXT2_ET_DIR_NO_SPACE,		ENOSPC },
	{ EXT2_ET_TOOSMALL,		ENOSPC },
	{ EXT2_ET_FILE_NOT_FOUND,	ENOENT },
	{ EXT2_ET_NO_MEMORY,		ENOMEM },
	{ EXT2_ET_RO_FILSYS,		EROFS },
	{ EXT2_ET_FILE_RO,		EROFS },
	{ EXT2_ET_DIR_EXISTS,		EEXIST },
	{ EXT2_ET_NO_DIRECTORY,		ENOTDIR },
	{ EXT2_ET_EA_KEY_NOT_FOUND,	ENODATA },
	{ EXT2_ET_EA_NO_SPACE,		ENOSPC },
};

int extref_errno(errcode_t err)
{
	size_t i;

	if (err == 0)
		return 0;
	/* A plain errno (com_err's table 0). */
	if (err > 0 && err < 256)
		return (int)err;
	for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].err == err)
			return classes[i].no;
	return EIO;
}
