/*
 * nosync.c --- one fsync for the new image, at the end.
 *
 * Opened again after mke2fs, the image is written in a few blocks, but
 * libext2fs and the tree's code flush (fsync) four times on the way: the
 * tree's header between two flushes, the superblock between two more.
 * That order is what keeps an existing image consistent through a crash;
 * a new one is not an image until mkfs.extref has finished (a crash
 * before leaves an image to make again), so here the channel writes
 * straight to the file (no cache) and its flush does nothing, and the
 * image is flushed once when it is complete (sync_image).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "mkfs.h"

static struct struct_io_manager nosync_manager;

/* Nothing is held (the channel's cache is off): nothing to write. */
static errcode_t no_flush(io_channel io)
{
	(void)io;
	return 0;
}

void nosync_attach(ext2_filsys fs)
{
	nosync_manager = *fs->io->manager;
	nosync_manager.flush = no_flush;
	fs->io->manager = &nosync_manager;
}

errcode_t sync_image(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	errcode_t err = 0;

	if (fd < 0)
		return errno;
	if (fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}
