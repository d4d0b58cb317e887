/*
 * verify_api.c --- the tree's block verifiers (verify.c) for programs
 * that read tree blocks themselves, such as debugfs.extref's
 * refcount_tree.  The same checks the library runs on every block it
 * reads; each returns 0 or the EXTREF_ERR_* code of the first check that
 * failed, and changes nothing.
 */
#include "extref_int.h"

/* Block 0 of inode 5; h_nblocks bounded by what inode 5 can hold. */
errcode_t extref_header_verify(ext2_filsys fs, const void *block)
{
	struct ext2_inode inode;
	errcode_t err;

	err = ext2fs_read_inode(fs, EXTREF_INO, &inode);
	if (err)
		return err;
	return xr_check_header(block, fs->blocksize, extref_csum_seed(fs),
			       fs->super->s_uuid,
			       xr_ino5_max_blocks(fs, &inode));
}

errcode_t extref_node_verify(ext2_filsys fs, const void *block, __u32 lblk)
{
	return xr_check_node_block(block, fs->blocksize, extref_csum_seed(fs),
				   lblk);
}

errcode_t extref_free_verify(ext2_filsys fs, const void *block, __u32 lblk,
			     __u32 nblocks)
{
	return xr_check_free_block(block, fs->blocksize, extref_csum_seed(fs),
				   lblk, nblocks);
}
