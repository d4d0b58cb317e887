/*
 * pathcache.c --- the inode of a path, remembered: FUSE's high-level API
 * names every request's file by its path, and resolving one reads every
 * directory on the way (a large one block by block, each block's
 * checksum checked): most of a tar extraction's time.
 *
 * Only for root (xf_ino asks here only then: root searches every
 * directory, so the walk's permission checks cannot refuse what is
 * remembered).  The server is the only writer of the mounted image, so
 * a path keeps its inode until a request removes or replaces a name:
 * unlink, rmdir and rename forget everything (dir.c), as does any error
 * of the library but a name not found (a step rolled back, a batch
 * dropped: xf_err).  A table of a bounded size, emptied when full.
 */
#include <stdlib.h>
#include <string.h>
#include "xfuse.h"

#define PC_SLOTS	65536		/* a power of two */
#define PC_MAX		(PC_SLOTS / 2)

struct pc_ent {
	char		*path;
	ext2_ino_t	ino;
};

static struct pc_ent *tab;
static size_t used;

static size_t hash(const char *s)
{
	size_t h = 14695981039346656037ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h & (PC_SLOTS - 1);
}

void xf_pathcache_forget(void)
{
	size_t i;

	if (!used)
		return;
	for (i = 0; i < PC_SLOTS; i++) {
		free(tab[i].path);
		tab[i].path = NULL;
	}
	used = 0;
}

int xf_pathcache_get(const char *path, ext2_ino_t *ino)
{
	size_t i;

	if (!tab)
		return 0;
	for (i = hash(path); tab[i].path; i = (i + 1) & (PC_SLOTS - 1))
		if (!strcmp(tab[i].path, path)) {
			*ino = tab[i].ino;
			return 1;
		}
	return 0;
}

void xf_pathcache_put(const char *path, ext2_ino_t ino)
{
	size_t i;

	if (!tab && !(tab = calloc(PC_SLOTS, sizeof(*tab))))
		return;
	if (used >= PC_MAX)
		xf_pathcache_forget();
	for (i = hash(path); tab[i].path; i = (i + 1) & (PC_SLOTS - 1))
		if (!strcmp(tab[i].path, path)) {
			tab[i].ino = ino;
			return;
		}
	if (!(tab[i].path = strdup(path)))
		return;
	tab[i].ino = ino;
	used++;
}
