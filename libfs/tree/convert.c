/*
 * convert.c --- make an existing ext4 filesystem an extref image; its
 * refusals, which write nothing, also on their own (a caller that must
 * refuse before its first write: builder/build_convert.c).
 */
#include "extref_int.h"

errcode_t xr_convert_check(ext2_filsys fs)
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
	return xr_ino5_is_empty(fs);
}

errcode_t extref_convert(ext2_filsys fs)
{
	errcode_t err = xr_convert_check(fs);

	return err ? err : extref_format(fs);
}
