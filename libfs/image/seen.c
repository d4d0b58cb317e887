/*
 * seen.c --- foreign writers (FORMAT.md section 11): whether a tool other
 * than this library wrote the image since a writer of ours last closed
 * it, looked at when the image is opened, and the record of the
 * superblock a read-write session leaves at its close (the tree header's
 * h_seen_* fields; tree/stamp.c keeps them).
 */
#include <time.h>
#include "tree/extref_int.h"
#include "base/xr_clock.h"
#include "xr_seen.h"

/* The tree whose header holds the record: the session's, or one opened
 * for the purpose (*own then says to free it). */
static extref_tree_t record_tree(extref_fs_t xfs, int flags, int *own)
{
	extref_tree_t t = xfs->tree;

	*own = 0;
	if (!t && !extref_tree_open(xfs->fs, flags, &t))
		*own = 1;
	return t;
}

/*
 * At the open (once): the record against the superblock as read.  A
 * session without its tree (fsck.extref's own, the shell's on a damaged
 * tree) looks only when it may write: its close carries what it saw.
 * Returns whether the superblock changed since the record (the stamp is
 * then not trusted); a foreign write an earlier writer of ours met and
 * proved past (EXTREF_SEEN_FOREIGN alone) is carried for fsck.extref,
 * not proved again.
 */
int xr_seen_open(extref_fs_t xfs)
{
	struct xr_seen s;
	extref_tree_t t;
	int own;

	if (xfs->seen_done)
		return xfs->seen_changed;
	if (!xfs->tree && !(xfs->fs->flags & EXT2_FLAG_RW))
		return 0;
	xfs->seen_done = 1;
	t = record_tree(xfs, 0, &own);
	if (!t)
		return 0;	/* unknown: the close keeps the record as is */
	xfs->seen_known = 1;
	xr_tree_seen(t, &s);
	xfs->seen_recorded = (s.flags & EXTREF_SEEN_RECORDED) != 0;
	xfs->foreign = xr_seen_foreign(t, xfs->fs->super);
	xfs->seen_changed = (s.flags & EXTREF_SEEN_RECORDED) &&
			    xr_seen_csum(t, xfs->fs->super) != s.csum;
	xfs->seen_sec = s.sec;
	xfs->seen_nsec = s.nsec;
	xfs->seen_flags = s.flags;
	/* the session's commits say a writer of ours is at work (the close's
	 * record clears it; a session that writes nothing writes no header) */
	if (!own && (s.flags & EXTREF_SEEN_RECORDED) &&
	    (t->flags & EXTREF_TREE_RW)) {
		s.flags |= EXTREF_SEEN_WRITING;
		xr_tree_set_seen(t, &s);
	}
	if (own)
		extref_tree_free(t);
	return xfs->seen_changed;
}

int extref_fs_foreign(extref_fs_t xfs)
{
	xr_seen_open(xfs);
	return xfs->foreign;
}

void extref_fs_accept(extref_fs_t xfs)
{
	xfs->seen_accept = 1;
}

void xr_seen_accept_run(extref_fs_t xfs)
{
	xfs->seen_accept = 1;
	xfs->seen_run = 1;
}

void xr_seen_copied(extref_fs_t xfs)
{
	xfs->seen_copied = 1;
}

/* Whether anything reached the image through the session's channel. */
static int session_wrote(ext2_filsys fs)
{
	io_stats st = NULL;

	return !fs->io->manager->get_stats ||
	       fs->io->manager->get_stats(fs->io, &st) || !st ||
	       st->bytes_written > 0;
}

/* What ext2fs_close2 counts once the bytes are counted here. */
static errcode_t counted(io_channel io, io_stats *stats)
{
	static struct struct_io_stats none = { .num_fields = 2 };

	(void) io;
	*stats = &none;
	return 0;
}

/*
 * The superblock the close will write, made now so that the record can
 * describe it: s_wtime from the clock the record takes (ext2fs_flush
 * writes fs->now there), and s_kbytes_written with this session's bytes
 * counted as ext2fs_close2 counts them (started at 1, as mke2fs starts
 * it, so that every later libext2fs writer moves it), after which the
 * channel reports nothing more to count.
 */
static void settle_super(extref_fs_t xfs, time_t now)
{
	ext2_filsys fs = xfs->fs;
	struct ext2_super_block *sb = fs->super;
	io_stats st = NULL;

	if (fs->io->manager->get_stats)
		fs->io->manager->get_stats(fs->io, &st);
	if (st && st->bytes_written) {
		sb->s_kbytes_written += st->bytes_written >> 10;
		if (!(fs->flags & EXT2_FLAG_SUPER_ONLY))
			sb->s_kbytes_written += (fs->desc_blocks + 1) /
						(fs->blocksize / 1024);
	}
	if (!sb->s_kbytes_written)
		sb->s_kbytes_written = 1;
	xfs->iom.get_stats = counted;
	fs->now = now;
	sb->s_wtime = (__u32)now;
	sb->s_wtime_hi = (__u8)((__u64)now >> 32);
	if (!(fs->flags & EXT2_FLAG_DIRTY))
		fs->flags |= EXT2_FLAG_SUPER_ONLY;
	ext2fs_mark_super_dirty(fs);
}

/*
 * The record's time: no file changed before it may have a later ctime.
 * SOURCE_DATE_EPOCH (fs->now), which every time an operation stamps then
 * is, where that holds: a record already there and no foreign write met
 * (every file since was stamped by us, or the foreign write is carried),
 * or an image this run made (accepted without a record: mkfs.extref,
 * whose output must be reproducible), or a foreign write by a tool the
 * caller ran at that clock (xr_seen_accept_run: --grow's resize2fs).
 * Else the later of the epoch and the clock to the nanosecond (a first
 * record over files of unknown times, an image accepted after another
 * foreign write).  Never earlier than the record it replaces.
 */
static void record_time(extref_fs_t xfs, struct xr_seen *s)
{
	ext2_filsys fs = xfs->fs;
	struct timespec ts;
	int epoch = fs->now && (xfs->seen_run || (xfs->seen_recorded ?
				!xfs->foreign : xfs->seen_accept));

	s->sec = fs->now ? (__u64)fs->now : 0;
	s->nsec = 0;
	if (!epoch) {
		xr_now_ts(NULL, &ts);	/* the clock: never a whole second */
		if ((__u64)ts.tv_sec >= s->sec) {
			s->sec = (__u64)ts.tv_sec;
			s->nsec = (__u32)ts.tv_nsec;
		}
	}
	/* never back: files stamped before the last record stay before */
	if (xfs->seen_recorded && (xfs->seen_sec > s->sec ||
	    (xfs->seen_sec == s->sec && xfs->seen_nsec > s->nsec))) {
		s->sec = xfs->seen_sec;
		s->nsec = xfs->seen_nsec;
	}
}

/*
 * Whether the record of time s says EXTREF_SEEN_NSEC (a whole-second
 * ctime in its second is another tool's): the session stamped with the
 * clock (SOURCE_DATE_EPOCH stamps whole seconds), and no file holds a
 * whole second there that the session vouches for without having stamped
 * it (an image it made, adopted or accepted, a first record, a build's
 * copied times, a writer of ours that died after a commit, whose clock
 * is unknown: every file is looked at) or that an earlier session of
 * ours left (the previous record's second, unless that said NSEC).
 */
static int nsec_record(extref_fs_t xfs, const struct xr_seen *s)
{
	if (xfs->fs->now)
		return 0;
	if (!xfs->seen_recorded || xfs->seen_accept || xfs->seen_copied ||
	    (xfs->seen_flags & EXTREF_SEEN_WRITING))
		return !xr_seen_whole(xfs->fs, s->sec);
	return (xfs->seen_flags & EXTREF_SEEN_NSEC) || xfs->seen_sec < s->sec;
}

/*
 * At the close of a read-write session that wrote after proving the
 * counts (or was told to accept what it found): the record of the superblock it leaves, with the
 * library's clock; a foreign write it met and nobody accepted is carried
 * (EXTREF_SEEN_FOREIGN, the older time kept), so that a later
 * fsck.extref still looks at the files changed since.  A tree that will
 * not open keeps no record (the next open then finds the superblock
 * changed: it proves in full).
 */
errcode_t xr_seen_close(extref_fs_t xfs, int proven)
{
	ext2_filsys fs = xfs->fs;
	struct xr_seen s = { 0 };
	extref_tree_t t;
	errcode_t err;
	int own, carry;

	/* a session whose checksums were not verified (debugfs.extref -n:
	 * expert commands only) proves nothing a record could rest on */
	if ((fs->flags & EXT2_FLAG_IGNORE_CSUM_ERRORS) && !xfs->seen_accept)
		return 0;
	if (!(fs->flags & EXT2_FLAG_RW) ||
	    !(xfs->seen_accept || session_wrote(fs) ||
	      (fs->flags & EXT2_FLAG_DIRTY)))
		return 0;
	/* only after a proof, with nothing but the library's own
	 * transactions since (xr_fs_proven, taken before the journal is
	 * detached), or where the caller vouches for what it wrote (it made
	 * the image: EXTREF_OPEN_TRUSTED, extref_fs_accept): an expert's raw
	 * edit is a write of another kind, left for the next look to see */
	if (!xfs->seen_accept && !proven &&
	    !(xfs->flags & EXTREF_OPEN_TRUSTED))
		return 0;
	xr_seen_open(xfs);
	carry = xfs->foreign && !xfs->seen_accept;
	/* what the open could not look at is not recorded over (a session
	 * that set shared_blocks, say): the next open looks again */
	if (!xfs->seen_known && !xfs->seen_accept)
		return 0;
	t = record_tree(xfs, EXTREF_TREE_RW, &own);
	if (!t || !(t->flags & EXTREF_TREE_RW))
		goto out;
	record_time(xfs, &s);
	s.flags = EXTREF_SEEN_RECORDED | (carry ? EXTREF_SEEN_FOREIGN |
		  (xfs->seen_flags & EXTREF_SEEN_NSEC) :
		  nsec_record(xfs, &s) ? EXTREF_SEEN_NSEC : 0);
	settle_super(xfs, fs->now ? fs->now : (time_t)s.sec);
	if (carry) {
		s.sec = xfs->seen_sec;
		s.nsec = xfs->seen_nsec;
	}
	xr_seen_take(t, fs->super, &s);
	err = xr_tree_write_seen(t, &s);
	if (own)
		extref_tree_close(t);
	return err;
out:
	if (own)
		extref_tree_free(t);
	return 0;
}
