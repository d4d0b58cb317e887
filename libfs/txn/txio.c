/*
 * txio.c --- the holding io channel of the transaction layer (xr_txio.h).
 *
 * A channel of our own is put over the image's channel.  Passing through,
 * it forwards every call.  Holding, a write lands in a table of whole
 * filesystem blocks (read first from below when the write covers part of
 * one); a read is served from below and then overlaid with the held
 * blocks; a flush waits for the commit; discard and zeroout are refused
 * (libext2fs then writes zeros, which are held like any write), since
 * they would reach the image before the commit.
 *
 * A block stays in the table after its commit, marked "logged", until the
 * journal is emptied: a data write to a logged block must revoke it, or a
 * replay would put the old metadata over the new data.
 */
#include <string.h>
#include "tree/extref_int.h"
#include "txn/xr_txio.h"

#define TXIO_MAGIC	0x74786f31	/* "txo1" */

struct txent {
	blk64_t		blk;
	unsigned char	*data;		/* held bytes, NULL if not held */
	int		logged;		/* in the journal, not yet emptied */
	unsigned int	sp_gen;		/* saved at this savepoint */
};

/* A block's state at the savepoint, kept before its first change since. */
struct txundo {
	blk64_t		blk;
	unsigned char	*data;		/* held bytes then, or NULL */
	int		logged;
};

struct xr_txio {
	__u32		magic;
	io_channel	lower;
	struct struct_io_channel chan;	/* ours, set as fs->io */
	unsigned int	bs;		/* fs->blocksize */
	int		holding;
	struct txent	*ent;
	size_t		nent, cap_ent;
	__u32		*slot;		/* index + 1 into ent, 0 empty */
	size_t		nslot;		/* a power of two */
	size_t		nheld;
	blk64_t		*rev;
	size_t		nrev, cap_rev;
	unsigned long	held_flushes;
	int		in_op;		/* the library's own operation writes */
	unsigned long	raw;		/* writes from outside its operations */
	void		*owner;
	/* called once, before the first write from outside the operations */
	errcode_t	(*first_raw)(void *owner);
	ext2_filsys	fs;		/* whose channel it is (tx_get_stats) */
	__u64		data;		/* file data written since the mark */
	__u64		uncounted;	/* written for what was dropped since */
	struct struct_io_stats stats;	/* what tx_get_stats gives */
	/* the savepoint (xr_txio_savepoint): what changed since */
	unsigned int	sp_gen;		/* 0: none taken */
	int		sp_on;
	struct txundo	*undo;
	size_t		nundo, cap_undo;
	blk64_t		*sp_rev;	/* the revokes then */
	size_t		sp_nrev, sp_cap_rev;
	__u64		sp_data;
};

static struct struct_io_manager txio_manager;

static struct xr_txio *chan_txio(io_channel ch)
{
	return ch->private_data;
}

io_channel xr_txio_lower(struct xr_txio *t)
{
	return t->lower;
}

static errcode_t tx_read_blk64(io_channel ch, unsigned long long block,
			       int count, void *data);

/* Ours, also under a copy of our manager (image/open.c's set_io_manager). */
static int is_txio(io_channel io)
{
	return io && io->manager && io->manager->read_blk64 == tx_read_blk64;
}

struct xr_txio *xr_txio_of(ext2_filsys fs)
{
	return fs && is_txio(fs->io) ? chan_txio(fs->io) : NULL;
}

io_channel xr_disk_io(io_channel io)
{
	while (is_txio(io))
		io = chan_txio(io)->lower;
	return io;
}

void xr_txio_set_owner(struct xr_txio *t, void *owner)
{
	t->owner = owner;
}

void *xr_txio_owner(struct xr_txio *t)
{
	return t->owner;
}

/*
 * What an operation rolled back wrote (file data to blocks it had
 * allocated, and blocks it allocated written early, xr_txio_spill: the
 * only bytes that reach the channel below while holding)
 * is not counted in s_kbytes_written: the image is as before it,
 * superblock included.  The count starts when holding starts and after
 * each commit; a drop uncounts it.
 */
void xr_txio_hold(struct xr_txio *t, int on)
{
	if (on && !t->holding)
		t->data = 0;
	t->holding = on;
}

int xr_txio_holding(struct xr_txio *t)
{
	return t && t->holding;
}

size_t xr_txio_nheld(struct xr_txio *t)
{
	return t->nheld;
}

unsigned long xr_txio_held_flushes(struct xr_txio *t)
{
	return t->held_flushes;
}

void xr_txio_op(struct xr_txio *t, int delta)
{
	t->in_op += delta;
}

unsigned long xr_txio_raw_writes(struct xr_txio *t)
{
	return t->raw;
}

void xr_txio_on_first_raw(struct xr_txio *t, errcode_t (*fn)(void *owner))
{
	t->first_raw = fn;
}

/* A write from outside the library's operations: counted, and the first
 * one calls the owner's hook first (inside an "operation" of its own). */
static errcode_t note_raw(struct xr_txio *t)
{
	errcode_t err = 0;

	if (t->in_op)
		return 0;
	if (!t->raw && t->first_raw && t->owner) {
		t->in_op++;
		err = t->first_raw(t->owner);
		t->in_op--;
	}
	t->raw++;
	return err;
}

/* ---- the table ---- */

static size_t hash_blk(blk64_t b, size_t n)
{
	return (size_t)((b * 0x9e3779b97f4a7c15ULL) >> 17) & (n - 1);
}

static struct txent *find(struct xr_txio *t, blk64_t blk)
{
	size_t i;

	if (!t->nslot)
		return NULL;
	for (i = hash_blk(blk, t->nslot); t->slot[i];
	     i = (i + 1) & (t->nslot - 1))
		if (t->ent[t->slot[i] - 1].blk == blk)
			return &t->ent[t->slot[i] - 1];
	return NULL;
}

static void put_slot(struct xr_txio *t, size_t idx)
{
	size_t i = hash_blk(t->ent[idx].blk, t->nslot);

	while (t->slot[i])
		i = (i + 1) & (t->nslot - 1);
	t->slot[i] = idx + 1;
}

static errcode_t rehash(struct xr_txio *t)
{
	size_t n = t->nslot ? t->nslot * 2 : 1024, i;
	__u32 *s;
	errcode_t err = ext2fs_get_arrayzero(n, sizeof(*s), &s);

	if (err)
		return err;
	ext2fs_free_mem(&t->slot);
	t->slot = s;
	t->nslot = n;
	for (i = 0; i < t->nent; i++)
		put_slot(t, i);
	return 0;
}

static errcode_t add(struct xr_txio *t, blk64_t blk, struct txent **ret)
{
	errcode_t err;

	if ((t->nent + 1) * 2 > t->nslot) {
		err = rehash(t);
		if (err)
			return err;
	}
	err = xr_grow(&t->ent, &t->cap_ent, t->nent, sizeof(*t->ent));
	if (err)
		return err;
	t->ent[t->nent].blk = blk;
	t->ent[t->nent].data = NULL;
	t->ent[t->nent].logged = 0;
	t->ent[t->nent].sp_gen = 0;
	put_slot(t, t->nent);
	*ret = &t->ent[t->nent++];
	return 0;
}

/*
 * A block held again after a revoke was queued for it (written as data or
 * spilled, then written as metadata in the same transaction): its copy is
 * journaled, and a revoke in the same transaction would hide that copy
 * from a replay.  As jbd2_journal_cancel_revoke, the revoke goes.
 */
static void cancel_revoke(struct xr_txio *t, blk64_t blk)
{
	size_t i;

	for (i = 0; i < t->nrev; i++)
		if (t->rev[i] == blk) {
			t->rev[i] = t->rev[--t->nrev];
			return;
		}
}

/* Before the first change of e since the savepoint: its state then. */
static errcode_t sp_save(struct xr_txio *t, struct txent *e)
{
	struct txundo *u;
	errcode_t err;

	if (!t->sp_on || e->sp_gen == t->sp_gen)
		return 0;
	err = xr_grow(&t->undo, &t->cap_undo, t->nundo, sizeof(*t->undo));
	if (err)
		return err;
	u = &t->undo[t->nundo];
	u->blk = e->blk;
	u->data = NULL;
	u->logged = e->logged;
	if (e->data) {
		err = ext2fs_get_mem(t->bs, &u->data);
		if (err)
			return err;
		memcpy(u->data, e->data, t->bs);
	}
	t->nundo++;
	e->sp_gen = t->sp_gen;
	return 0;
}

/* The held copy of blk, made (from what is below) if there is none. */
static errcode_t held_block(struct xr_txio *t, blk64_t blk, int whole,
			    unsigned char **ret)
{
	struct txent *e = find(t, blk);
	errcode_t err;

	if (!e) {
		err = add(t, blk, &e);
		if (err)
			return err;
	}
	err = sp_save(t, e);
	if (err)
		return err;
	if (!e->data) {
		cancel_revoke(t, blk);
		err = ext2fs_get_mem(t->bs, &e->data);
		/* in the units of the channel below, whose block size
		 * libext2fs may have changed for a moment (the superblock) */
		if (!err && !whole)
			err = io_channel_read_blk64(t->lower,
				(blk * t->bs) / t->lower->block_size,
				-(int)t->bs, e->data);
		if (err) {
			ext2fs_free_mem(&e->data);
			return err;
		}
		t->nheld++;
	}
	*ret = e->data;
	return 0;
}

static void unhold(struct xr_txio *t, struct txent *e)
{
	if (e->data) {
		ext2fs_free_mem(&e->data);
		t->nheld--;
	}
}

errcode_t xr_txio_put_bytes(struct xr_txio *t, __u64 off, size_t len,
			    const void *data)
{
	const unsigned char *p = data;
	errcode_t err;

	while (len) {
		blk64_t blk = off / t->bs;
		size_t in = off % t->bs;
		size_t n = t->bs - in < len ? t->bs - in : len;
		unsigned char *b;

		err = held_block(t, blk, in == 0 && n == t->bs, &b);
		if (err)
			return err;
		memcpy(b + in, p, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* Lay the held blocks over len bytes read at byte offset off. */
static void overlay(struct xr_txio *t, __u64 off, size_t len,
		    unsigned char *buf)
{
	blk64_t b, first = off / t->bs, last = (off + len - 1) / t->bs;

	if (!t->nheld || !len)
		return;
	for (b = first; b <= last; b++) {
		struct txent *e = find(t, b);
		__u64 bs = (__u64)b * t->bs, s, end;

		if (!e || !e->data)
			continue;
		s = bs > off ? bs : off;
		end = bs + t->bs < off + len ? bs + t->bs : off + len;
		memcpy(buf + (s - off), e->data + (s - bs), end - s);
	}
}

static int cmp_txblock(const void *a, const void *b)
{
	const struct xr_txblock *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

errcode_t xr_txio_held(struct xr_txio *t, struct xr_txblock **ret,
		       size_t *n)
{
	struct xr_txblock *v = NULL;
	size_t i, k = 0;
	errcode_t err;

	*ret = NULL;
	*n = 0;
	if (!t->nheld)
		return 0;
	err = ext2fs_get_array(t->nheld, sizeof(*v), &v);
	if (err)
		return err;
	for (i = 0; i < t->nent; i++)
		if (t->ent[i].data) {
			v[k].blk = t->ent[i].blk;
			v[k++].data = t->ent[i].data;
		}
	qsort(v, k, sizeof(*v), cmp_txblock);
	*ret = v;
	*n = k;
	return 0;
}

errcode_t xr_txio_write_home(struct xr_txio *t)
{
	struct xr_txblock *v;
	size_t n, i;
	errcode_t err = xr_txio_held(t, &v, &n);

	for (i = 0; !err && i < n; i++)
		err = io_channel_write_blk64(t->lower, v[i].blk, 1, v[i].data);
	ext2fs_free_mem(&v);
	if (err)
		return err;
	for (i = 0; i < t->nent; i++)
		if (t->ent[i].data) {
			t->ent[i].logged = 1;
			unhold(t, &t->ent[i]);
		}
	t->data = 0;		/* committed: counted */
	return 0;
}

/*
 * Drop the entries that are of no more use: with drop_held, every held
 * copy goes and only the logged entries stay (a rollback); without, the
 * held copies stay and so do the logged entries.
 */
static void compact(struct xr_txio *t, int drop_held)
{
	size_t i, k = 0;

	for (i = 0; i < t->nent; i++) {
		if (drop_held)
			unhold(t, &t->ent[i]);
		if (t->ent[i].logged || t->ent[i].data ||
		    (t->sp_on && t->ent[i].sp_gen == t->sp_gen))
			t->ent[k++] = t->ent[i];
	}
	t->nent = k;
	if (t->nslot)
		memset(t->slot, 0, t->nslot * sizeof(*t->slot));
	for (i = 0; i < t->nent; i++)
		put_slot(t, i);
}

void xr_txio_drop(struct xr_txio *t)
{
	xr_txio_sp_end(t);
	t->uncounted += t->data;
	t->data = 0;
	compact(t, 1);
	t->nrev = 0;
	t->held_flushes = 0;
}

void xr_txio_forget_logged(struct xr_txio *t)
{
	size_t i;

	for (i = 0; i < t->nent; i++)
		t->ent[i].logged = 0;
	compact(t, 0);
}

const blk64_t *xr_txio_revokes(struct xr_txio *t, size_t *n)
{
	*n = t->nrev;
	return t->rev;
}

void xr_txio_clear_revokes(struct xr_txio *t)
{
	t->nrev = 0;
	t->held_flushes = 0;
}

errcode_t xr_txio_spill(struct xr_txio *t,
			int (*fresh)(void *arg, blk64_t blk), void *arg,
			size_t *nspilled)
{
	size_t i, n = 0;
	errcode_t err = 0;

	for (i = 0; !err && i < t->nent; i++) {
		struct txent *e = &t->ent[i];

		if (!e->data || !fresh(arg, e->blk))
			continue;
		err = sp_save(t, e);
		if (!err && e->logged)	/* kept logged: a later data write revokes too */
			err = xr_grow(&t->rev, &t->cap_rev, t->nrev,
				      sizeof(*t->rev));
		if (!err && e->logged)
			t->rev[t->nrev++] = e->blk;
		if (!err)
			err = io_channel_write_blk64(t->lower, e->blk, 1,
						     e->data);
		if (!err) {
			unhold(t, e);
			t->data += t->bs;	/* uncounted if dropped, as data */
			n++;
		}
	}
	if (nspilled)
		*nspilled = n;
	return err;
}

errcode_t xr_tx_write_data(ext2_filsys fs, blk64_t blk, int count,
			   const void *buf)
{
	struct xr_txio *t = xr_txio_of(fs);
	errcode_t err;
	int i;

	if (!t || !t->holding)
		return io_channel_write_blk64(fs->io, blk, count, buf);
	for (i = 0; i < count; i++) {
		struct txent *e = find(t, blk + i);

		if (!e)
			continue;
		err = sp_save(t, e);
		if (err)
			return err;
		unhold(t, e);
		if (e->logged) {
			err = xr_grow(&t->rev, &t->cap_rev, t->nrev,
				      sizeof(*t->rev));
			if (err)
				return err;
			t->rev[t->nrev++] = blk + i;
			e->logged = 0;
		}
	}
	t->data += (__u64)count * t->bs;
	return io_channel_write_blk64(t->lower, blk, count, buf);
}

/* ---- savepoints ---- */

/*
 * A batch of operations in one transaction (txn.c) takes a savepoint as
 * each operation starts: the first change of a block since keeps its
 * state then (sp_save), so that a failed operation goes back to the
 * savepoint alone, and the operations before it stay held.
 */
errcode_t xr_txio_savepoint(struct xr_txio *t)
{
	errcode_t err;

	xr_txio_sp_end(t);
	if (t->nrev > t->sp_cap_rev) {
		err = ext2fs_resize_array(sizeof(*t->sp_rev), t->sp_cap_rev,
					  t->nrev, &t->sp_rev);
		if (err)
			return err;
		t->sp_cap_rev = t->nrev;
	}
	if (t->nrev)
		memcpy(t->sp_rev, t->rev, t->nrev * sizeof(*t->rev));
	t->sp_nrev = t->nrev;
	t->sp_data = t->data;
	if (!++t->sp_gen)
		t->sp_gen = 1;
	t->sp_on = 1;
	return 0;
}

/* The operation stays: forget the states kept for it. */
void xr_txio_sp_end(struct xr_txio *t)
{
	size_t i;

	for (i = 0; i < t->nundo; i++)
		ext2fs_free_mem(&t->undo[i].data);
	t->nundo = 0;
	t->sp_on = 0;
}

/* Anything held, dropped or revoked since the savepoint. */
int xr_txio_sp_changed(struct xr_txio *t)
{
	return t->sp_on && (t->nundo || t->nrev != t->sp_nrev ||
			    (t->nrev && memcmp(t->rev, t->sp_rev,
					       t->nrev * sizeof(*t->rev))));
}

/* The entry of u's block (kept by compact while the savepoint lasts). */
static struct txent *undo_ent(struct xr_txio *t, const struct txundo *u)
{
	struct txent *e = find(t, u->blk);

	if (!e && add(t, u->blk, &e))
		e = NULL;
	return e;
}

/* Exchange each block's state with the one kept for it, and the revokes
 * with those of the savepoint; logged stays set on both sides (a block
 * logged in between needs its revoke). */
void xr_txio_sp_swap(struct xr_txio *t)
{
	size_t i, n;
	blk64_t *r;

	for (i = 0; i < t->nundo; i++) {
		struct txundo *u = &t->undo[i];
		struct txent *e = undo_ent(t, u);
		unsigned char *d;

		if (!e)
			continue;
		d = e->data;
		e->data = u->data;
		u->data = d;
		t->nheld += (e->data != NULL) - (d != NULL);
		e->logged = u->logged = e->logged | u->logged;
	}
	r = t->rev, t->rev = t->sp_rev, t->sp_rev = r;
	n = t->nrev, t->nrev = t->sp_nrev, t->sp_nrev = n;
	n = t->cap_rev, t->cap_rev = t->sp_cap_rev, t->sp_cap_rev = n;
}

/*
 * After the state at the savepoint was committed between two swaps: a
 * block the operation no longer holds (written as data) that the commit
 * logged is revoked by the operation's own commit.
 */
errcode_t xr_txio_sp_revoke_logged(struct xr_txio *t)
{
	size_t i, j;
	errcode_t err;

	for (i = 0; i < t->nundo; i++) {
		struct txent *e = find(t, t->undo[i].blk);

		if (!e || e->data || !e->logged)
			continue;
		for (j = 0; j < t->nrev && t->rev[j] != e->blk; j++)
			;
		if (j < t->nrev)
			continue;
		err = xr_grow(&t->rev, &t->cap_rev, t->nrev, sizeof(*t->rev));
		if (err)
			return err;
		t->rev[t->nrev++] = e->blk;
	}
	return 0;
}

/* Back to the savepoint: each block as it was then, the revokes too. */
void xr_txio_sp_rollback(struct xr_txio *t)
{
	size_t i;

	for (i = t->nundo; i-- > 0;) {
		struct txundo *u = &t->undo[i];
		struct txent *e = undo_ent(t, u);

		if (!e)
			continue;
		unhold(t, e);
		e->data = u->data;
		u->data = NULL;
		if (e->data)
			t->nheld++;
		e->logged |= u->logged;
		e->sp_gen = 0;
	}
	if (t->sp_nrev)
		memcpy(t->rev, t->sp_rev, t->sp_nrev * sizeof(*t->rev));
	t->nrev = t->sp_nrev;
	if (t->data > t->sp_data)
		t->uncounted += t->data - t->sp_data;
	t->data = t->sp_data;
	xr_txio_sp_end(t);
}

/* ---- the channel ---- */

/* Bytes and byte offset of a (block, count) call at the channel's size. */
static void span(io_channel ch, unsigned long long block, int count,
		 __u64 *off, size_t *len)
{
	*off = block * (__u64)ch->block_size;
	*len = count < 0 ? (size_t)-count : (size_t)count * ch->block_size;
}

static errcode_t tx_read_blk64(io_channel ch, unsigned long long block,
			       int count, void *data)
{
	struct xr_txio *t = chan_txio(ch);
	errcode_t err = io_channel_read_blk64(t->lower, block, count, data);
	__u64 off;
	size_t len;

	if (err || !t->nheld)
		return err;
	span(ch, block, count, &off, &len);
	overlay(t, off, len, data);
	return 0;
}

static errcode_t tx_read_blk(io_channel ch, unsigned long block, int count,
			     void *data)
{
	return tx_read_blk64(ch, block, count, data);
}

/* The first raw write's hook runs while the caller waits: it may reuse
 * the very buffer being written (libext2fs writes an inode from its
 * inode cache's block buffer, which the hook's reads of inode 5 fill),
 * so such a write goes out from a copy taken before the hook. */
static int hook_due(const struct xr_txio *t)
{
	return !t->in_op && !t->raw && t->first_raw && t->owner;
}

static errcode_t write_blk64(struct xr_txio *t, io_channel ch,
			     unsigned long long block, int count,
			     const void *data)
{
	errcode_t err = note_raw(t);
	__u64 off;
	size_t len;

	if (err)
		return err;
	if (!t->holding)
		return io_channel_write_blk64(t->lower, block, count, data);
	span(ch, block, count, &off, &len);
	return xr_txio_put_bytes(t, off, len, data);
}

static errcode_t tx_write_blk64(io_channel ch, unsigned long long block,
				int count, const void *data)
{
	struct xr_txio *t = chan_txio(ch);
	void *copy = NULL;
	__u64 off;
	size_t len;
	errcode_t err;

	if (!hook_due(t))
		return write_blk64(t, ch, block, count, data);
	span(ch, block, count, &off, &len);
	err = ext2fs_get_mem(len, &copy);
	if (err)
		return err;
	memcpy(copy, data, len);
	err = write_blk64(t, ch, block, count, copy);
	ext2fs_free_mem(&copy);
	return err;
}

static errcode_t tx_write_blk(io_channel ch, unsigned long block, int count,
			      const void *data)
{
	return tx_write_blk64(ch, block, count, data);
}

static errcode_t tx_flush(io_channel ch)
{
	struct xr_txio *t = chan_txio(ch);

	if (t->holding) {
		t->held_flushes++;
		return 0;
	}
	return io_channel_flush(t->lower);
}

static errcode_t tx_set_blksize(io_channel ch, int blksize)
{
	struct xr_txio *t = chan_txio(ch);
	errcode_t err = io_channel_set_blksize(t->lower, blksize);

	if (!err)
		ch->block_size = blksize;
	return err;
}

static errcode_t tx_set_option(io_channel ch, const char *opt,
			       const char *arg)
{
	struct xr_txio *t = chan_txio(ch);

	if (!t->lower->manager->set_option)
		return EXT2_ET_INVALID_ARGUMENT;
	return t->lower->manager->set_option(t->lower, opt, arg);
}

/*
 * The statistics of the channel below, which every byte that reaches the
 * image passes: the journal's blocks, the blocks written in place, file
 * data.  ext2fs_close adds its bytes written to s_kbytes_written, as for
 * an image without a journal (and as the kernel counts every sector
 * written, the journal's too).  As there, a write still in the cache of
 * the channel below when the image closes is not counted, and the count
 * rewrites the superblock at close.  Not when the primary superblock on
 * disk holds a wrong checksum that fs->super holds too: an expert wrote
 * it as given (the shell's ssv checksum), and the rewrite would correct
 * it.
 */
static int raw_super_edit(struct xr_txio *t)
{
	ext2_filsys fs = t->fs;
	char buf[SUPERBLOCK_OFFSET + SUPERBLOCK_SIZE];
	struct ext2_super_block *sb = (void *)(buf + SUPERBLOCK_OFFSET);

	if (!fs || !ext2fs_has_feature_metadata_csum(fs->super) ||
	    io_channel_read_blk64(t->lower, 0, -(int)sizeof(buf), buf))
		return 0;
	return sb->s_checksum == fs->super->s_checksum &&
	       !ext2fs_superblock_csum_verify(fs, sb);
}

static errcode_t tx_get_stats(io_channel ch, io_stats *stats)
{
	struct xr_txio *t = chan_txio(ch);
	io_stats st = NULL;
	errcode_t err;

	*stats = NULL;
	if (!t->lower->manager->get_stats || raw_super_edit(t))
		return 0;
	err = t->lower->manager->get_stats(t->lower, &st);
	if (err || !st)
		return err;
	t->stats = *st;
	t->stats.bytes_written = st->bytes_written > t->uncounted ?
				 st->bytes_written - t->uncounted : 0;
	*stats = &t->stats;
	return 0;
}

static errcode_t tx_discard(io_channel ch, unsigned long long block,
			    unsigned long long count)
{
	struct xr_txio *t = chan_txio(ch);
	errcode_t err = note_raw(t);

	if (err)
		return err;
	if (t->holding || !t->lower->manager->discard)
		return EXT2_ET_UNIMPLEMENTED;
	return t->lower->manager->discard(t->lower, block, count);
}

static errcode_t tx_zeroout(io_channel ch, unsigned long long block,
			    unsigned long long count)
{
	struct xr_txio *t = chan_txio(ch);
	errcode_t err = note_raw(t);

	if (err)
		return err;
	if (t->holding || !t->lower->manager->zeroout)
		return EXT2_ET_UNIMPLEMENTED;
	return t->lower->manager->zeroout(t->lower, block, count);
}

static errcode_t tx_readahead(io_channel ch, unsigned long long block,
			      unsigned long long count)
{
	struct xr_txio *t = chan_txio(ch);

	if (!t->lower->manager->cache_readahead)
		return EXT2_ET_UNIMPLEMENTED;
	return t->lower->manager->cache_readahead(t->lower, block, count);
}

static void free_txio(struct xr_txio *t)
{
	size_t i;

	for (i = 0; i < t->nent; i++)
		unhold(t, &t->ent[i]);
	ext2fs_free_mem(&t->ent);
	ext2fs_free_mem(&t->slot);
	ext2fs_free_mem(&t->rev);
	xr_txio_sp_end(t);
	ext2fs_free_mem(&t->undo);
	ext2fs_free_mem(&t->sp_rev);
	ext2fs_free_mem(&t);
}

/*
 * ext2fs_close closes fs->io: ours flushes the one below (extref_fs_close
 * has ext2fs_close write the superblock without flushes of its own), closes
 * it, then goes.
 */
static errcode_t tx_close(io_channel ch)
{
	struct xr_txio *t = chan_txio(ch);
	errcode_t err, err2;

	if (--ch->refcount > 0)		/* extref_fs_close holds one */
		return 0;
	err = t->holding ? 0 : io_channel_flush(t->lower);
	err2 = io_channel_close(t->lower);

	if (!err)
		err = err2;

	free_txio(t);
	return err;
}

static errcode_t tx_open(const char *name, int flags, io_channel *ch)
{
	(void)name; (void)flags; (void)ch;
	return EXT2_ET_UNIMPLEMENTED;	/* made by xr_txio_attach only */
}

static struct struct_io_manager txio_manager = {
	.magic		= EXT2_ET_MAGIC_IO_MANAGER,
	.name		= "extref transaction I/O manager",
	.open		= tx_open,
	.close		= tx_close,
	.set_blksize	= tx_set_blksize,
	.read_blk	= tx_read_blk,
	.write_blk	= tx_write_blk,
	.flush		= tx_flush,
	.set_option	= tx_set_option,
	.get_stats	= tx_get_stats,
	.read_blk64	= tx_read_blk64,
	.write_blk64	= tx_write_blk64,
	.discard	= tx_discard,
	.cache_readahead = tx_readahead,
	.zeroout	= tx_zeroout,
};

errcode_t xr_txio_attach(ext2_filsys fs, struct xr_txio **ret)
{
	struct xr_txio *t;
	errcode_t err = ext2fs_get_memzero(sizeof(*t), &t);

	if (err)
		return err;
	t->magic = TXIO_MAGIC;
	t->fs = fs;
	t->lower = fs->io;
	t->bs = fs->blocksize;
	t->chan = *fs->io;		/* name, sizes, flags, app_data */
	t->chan.manager = &txio_manager;
	t->chan.private_data = t;
	t->chan.refcount = 1;
	fs->io = &t->chan;
	if (fs->image_io == t->lower)
		fs->image_io = &t->chan;
	*ret = t;
	return 0;
}

void xr_txio_detach(ext2_filsys fs, struct xr_txio *t)
{
	if (!t)
		return;
	if (fs->io == &t->chan)
		fs->io = t->lower;
	if (fs->image_io == &t->chan)
		fs->image_io = t->lower;
	free_txio(t);
}
