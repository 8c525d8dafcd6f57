/*
 * size_class.h — the allocator's size classes, as the core library (cutting
 * a run into blocks) and the Redis module (cutting a packed key into
 * blocks) both plan them: jemalloc's, 16 bytes apart up to 128, then four
 * per doubling.  A guess about the host's allocator, which both check
 * against the usable sizes it reports; other allocators round less.
 */
#ifndef SEEN_COMMON_SIZE_CLASS_H
#define SEEN_COMMON_SIZE_CLASS_H

#include <stddef.h>

/* The class a block of `size` bytes takes. */
static inline size_t size_class_of(size_t size)
{
    if (size <= 16)
        return 16;
    if (size <= 128)
        return (size + 15) & ~(size_t)15;
    unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
    size_t step = (size_t)1 << (lg - 2);
    return (size + step - 1) & ~(step - 1);
}

/* The class below the class `size` (itself a class), 0 below the first. */
static inline size_t size_class_below(size_t size)
{
    if (size <= 128)
        return size > 16 ? size - 16 : 0;
    unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
    return size - ((size_t)1 << (lg - 2));
}

#endif
