// Counts allocations by interposing glibc's allocator from the executable that links this target: per thread
// (so a reader thread's allocations are told apart from the sync loop's) and live bytes (for memory figures).
// Linux/glibc only; the executable's definitions win over libc's for every shared library (ELF interposition).
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include "MallocCounter.h"

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static __thread unsigned long long thread_mallocs;
static _Atomic unsigned long long total_mallocs;
static _Atomic long long live_bytes;

static void *counted(void *pointer) {
    if (pointer) {
        thread_mallocs++;
        atomic_fetch_add_explicit(&total_mallocs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&live_bytes, (long long)malloc_usable_size(pointer), memory_order_relaxed);
    }
    return pointer;
}

void *malloc(size_t size) { return counted(__libc_malloc(size)); }

void *calloc(size_t count, size_t size) { return counted(__libc_calloc(count, size)); }

void free(void *pointer) {
    if (pointer) atomic_fetch_sub_explicit(&live_bytes, (long long)malloc_usable_size(pointer), memory_order_relaxed);
    __libc_free(pointer);
}

void *realloc(void *pointer, size_t size) {
    long long before = pointer ? (long long)malloc_usable_size(pointer) : 0;
    void *result = __libc_realloc(pointer, size);
    if (result) {
        thread_mallocs++;
        atomic_fetch_add_explicit(&total_mallocs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&live_bytes, (long long)malloc_usable_size(result) - before, memory_order_relaxed);
    } else if (pointer && size == 0) {
        atomic_fetch_sub_explicit(&live_bytes, before, memory_order_relaxed);
    }
    return result;
}

void *memalign(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }

void *aligned_alloc(size_t alignment, size_t size) { return counted(__libc_memalign(alignment, size)); }

int posix_memalign(void **out, size_t alignment, size_t size) {
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *out = counted(pointer);
    return 0;
}

unsigned long long sy_thread_mallocs(void) { return thread_mallocs; }

unsigned long long sy_total_mallocs(void) { return atomic_load(&total_mallocs); }

long long sy_live_bytes(void) { return atomic_load(&live_bytes); }
