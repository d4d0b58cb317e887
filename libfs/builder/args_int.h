/*
 * args_int.h --- the checks of a build's options (extref_build_args_*),
 * inside the library: args.c sets and checks them, args_ext.c checks -E
 * and -O, args_mke2fs.c keeps the mke2fs options passed on, args_num.c
 * reads numbers and sizes.
 */
#ifndef EXTREF_ARGS_INT_H
#define EXTREF_ARGS_INT_H

#include "extref_builder.h"

/* A why line (len bytes) and err back. */
errcode_t xr_args_why(char *why, size_t len, errcode_t err,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* args_ext.c: -E and -O, checked and joined into a's lists. */
errcode_t xr_args_ext(struct extref_build_args *a, const char *arg,
		      char *why, size_t len);
errcode_t xr_args_features(struct extref_build_args *a, const char *arg,
			   char *why, size_t len);

/* args_mke2fs.c: one of the mke2fs options passed on (or refused);
 * 1 when opt is not one of them (nothing done). */
extern const char xr_mke2fs_pass_optstring[];
errcode_t xr_args_mke2fs(struct extref_build_args *a, int opt,
			 const char *arg, char *why, size_t len, int *taken);
int xr_args_mke2fs_needs_arg(int opt);

#endif /* EXTREF_ARGS_INT_H */
