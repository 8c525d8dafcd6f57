/*
 * alloc.c — the allocation hook.  Every byte the library holds comes from
 * the allocator installed here, so a host (the Redis module) can account
 * for it, and tests can make any single allocation fail.
 */
#include "../common/size_class.h"
#include "internal.h"

#include <stdlib.h>

static void *libc_malloc(size_t size)
{
    return malloc(size);
}
static void *libc_realloc(void *ptr, size_t size)
{
    return realloc(ptr, size);
}
static void libc_free(void *ptr)
{
    free(ptr);
}

static seen_allocator current = {libc_malloc, libc_realloc, libc_free, NULL};

void seen_set_allocator(const seen_allocator *alloc)
{
    if (alloc == NULL || alloc->malloc_fn == NULL || alloc->realloc_fn == NULL ||
        alloc->free_fn == NULL) {
        current = (seen_allocator){libc_malloc, libc_realloc, libc_free, NULL};
        return;
    }
    current = *alloc;
}

void *seen__malloc(size_t size)
{
    return current.malloc_fn(size ? size : 1);
}

void *seen__calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    size_t total = count * size;
    void *p = seen__malloc(total);
    if (p != NULL && total > 0)
        memset(p, 0, total);
    return p;
}

void *seen__realloc(void *ptr, size_t size)
{
    if (ptr == NULL)
        return seen__malloc(size);
    return current.realloc_fn(ptr, size ? size : 1);
}

void seen__free(void *ptr)
{
    if (ptr != NULL)
        current.free_fn(ptr);
}

size_t seen__alloc_size(void *ptr, size_t requested)
{
    if (ptr == NULL)
        return 0;
    if (current.usable_size_fn != NULL)
        return current.usable_size_fn(ptr);
    return requested;
}

bool seen__alloc_rounds(void)
{
    return current.usable_size_fn != NULL;
}

size_t seen__alloc_class(size_t size)
{
    return size_class_of(size);
}
