/*
 * xr_search.h --- the one binary search, shared by the layers and the
 * shell.
 *
 * XR_PARTITION_POINT(n, i, pred) is the first index i in [0, n) for
 * which pred (an expression of i) is false, where pred is true on a
 * prefix of the range and false after it; n when it is true throughout.
 * XR_LOWER_BOUND(arr, n, field, key) is that point for
 * arr[i].field < key: the first element whose field is >= key in an
 * array sorted by field.
 */
#ifndef XR_SEARCH_H
#define XR_SEARCH_H

#include <stddef.h>

#define XR_PARTITION_POINT(n, i, pred) __extension__ ({			\
	size_t lo_ = 0, hi_ = (n);					\
									\
	while (lo_ < hi_) {						\
		size_t i = lo_ + (hi_ - lo_) / 2;			\
									\
		if (pred)						\
			lo_ = i + 1;					\
		else							\
			hi_ = i;					\
	}								\
	lo_;								\
})

#define XR_LOWER_BOUND(arr, n, field, key)				\
	XR_PARTITION_POINT((n), xr_i_, (arr)[xr_i_].field < (key))

#endif /* XR_SEARCH_H */
