/*
 * shrink_int.h --- what the inode-table layout of --shrink
 * (shrink_itable.c) and its renumbering (shrink_renum.c) share.
 */
#ifndef SHRINK_INT_H
#define SHRINK_INT_H

#include <ext2fs/ext2fs.h>

struct relayout {
	ext2_filsys	fs;
	__u32		ipg;		/* the new inodes per group */
	blk64_t		ibpg;		/* its inode-table blocks */
	dgrp_t		groups;		/* the groups that stay */
	size_t		n;		/* inodes kept (the reserved ones too) */
	ext2_ino_t	*old;		/* their numbers, sorted */
	ext2_ino_t	*new;		/* their new numbers */
	char		*bytes;		/* their inodes, n * inode size */
	int		moved;		/* a number changed */
};

/* shrink_renum.c: refuse, when r renumbers, what names inodes we
 * cannot follow. */
errcode_t shrink_renum_check(ext2_filsys fs, const struct relayout *r);
/* After the inodes are in their new slots: directory entries, extent
 * and directory checksums, the superblock's inode fields. */
errcode_t shrink_renum(struct relayout *r);
/* shrink_journal.c: the blocks of the journal a fresh build would
 * have, when the image's own is larger (else 0); and the journal made
 * that size (fs's caller closes it to write). */
blk64_t shrink_journal_want(ext2_filsys fs);
errcode_t shrink_journal(ext2_filsys fs, blk64_t blocks);
/* shrink_resize_inode.c: every block of inode ino freed (bitmaps and
 * counts) and the inode cleared; whether the image's resize inode goes
 * (1 KiB blocks), and it gone. */
errcode_t shrink_free_inode(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode *inode);
int shrink_drop_resize_inode_wanted(ext2_filsys fs);
errcode_t shrink_drop_resize_inode(ext2_filsys fs);
/* shrink.c: one unit of work done (crash tests kill there, or fail it:
 * an error to return; 0 in other builds). */
errcode_t shrink_tick(void);

#endif
