/*
 * convert.c --- make an existing ext4 filesystem an extref image.
 */
#include "extref_int.h"

errcode_t extref_convert(ext2_filsys fs)
{
	if (ext2fs_has_feature_bigalloc(fs->super))
		return EXTREF_ERR_BIGALLOC;
	if (ext2fs_has_feature_shared_blocks(fs->super))
		return EXTREF_ERR_ALREADY;
	if (!ext2fs_has_feature_extents(fs->super))
		return EXTREF_ERR_NO_EXTENTS;
	/* converting the unreplayed state would build on what the journal
	 * overrides */
	if (ext2fs_has_feature_journal_needs_recovery(fs->super))
		return EXTREF_ERR_NEEDS_RECOVERY;
	return extref_format(fs);
}
