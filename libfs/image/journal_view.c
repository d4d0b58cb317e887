/*
 * journal_view.c --- the image's journal as it is on disk, for the tools
 * that show it (extref_journal_walk, extref.h): read through the channel
 * under any holding one, so a read-only view's in-memory replay does not
 * hide the log it replayed.
 */
#include "journal/xr_journal.h"
#include "journal/jbd2_format.h"
#include "txn/xr_txio.h"

_Static_assert(EXTREF_JBLOCK_DESCRIPTOR == JBD2_DESCRIPTOR_BLOCK &&
	       EXTREF_JBLOCK_COMMIT == JBD2_COMMIT_BLOCK &&
	       EXTREF_JBLOCK_SUPER_V1 == JBD2_SUPERBLOCK_V1 &&
	       EXTREF_JBLOCK_SUPER_V2 == JBD2_SUPERBLOCK_V2 &&
	       EXTREF_JBLOCK_REVOKE == JBD2_REVOKE_BLOCK,
	       "extref.h's block types are jbd2's");

errcode_t extref_journal_walk(extref_fs_t xfs, struct extref_jinfo *info,
			      extref_jwalk_fn fn, void *priv)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_journal *j;
	errcode_t err = xr_journal_open(fs, xr_disk_io(fs->io), &j);

	if (err)
		return err;
	xr_journal_info(j, info);
	if (fn)
		err = xr_journal_walk(j, fn, priv);
	xr_journal_close(j);
	return err;
}
