#ifndef SWITCHYARD_MALLOC_COUNTER_H
#define SWITCHYARD_MALLOC_COUNTER_H

/// Allocations made by the calling thread since it started (malloc, calloc, realloc, aligned allocations).
unsigned long long sy_thread_mallocs(void);

/// Allocations made by every thread since the process started.
unsigned long long sy_total_mallocs(void);

/// Bytes currently allocated (usable sizes), by every thread.
long long sy_live_bytes(void);

#endif
