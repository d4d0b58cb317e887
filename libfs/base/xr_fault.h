/*
 * xr_fault.h --- test hooks, built only with configure
 * --enable-fault-injection (EXTREF_FAULT_INJECTION): the fault-injecting
 * io manager (txn/faultio.c, EXTREF_FAULT) and xr_fault_nomem()
 * (base/fault.c), true when this array growth is to fail
 * (EXTREF_FAULT_NOMEM).
 */
#ifndef XR_FAULT_H
#define XR_FAULT_H

#ifdef EXTREF_FAULT_INJECTION
#include <ext2fs/ext2fs.h>

extern io_manager extref_fault_io_manager;
int xr_fault_nomem(void);
#endif

#endif /* XR_FAULT_H */
