/* Internal: per-thread scratch for kernel temporaries.
 *
 * A quantized product's activation rows, a range's panel buffer, attention's
 * per-range tiles: a few hundred KB each, taken and given back once per
 * call, hundreds of times per generated token. From malloc they land in
 * glibc's heap once its mmap threshold has risen past them (it rises to the
 * largest mapped block freed so far) and leave holes there that stay
 * resident; mapping each one instead costs page faults on every call. Here
 * each thread keeps one mapped block sized by its deepest use and hands its
 * bytes out in stack order: after the first calls a kernel's temporaries
 * cost neither a system call nor a fresh page, and the process holds one
 * block per thread (its largest need) instead of a fragmented heap.
 *
 * tp_temp_alloc(bytes): 64-byte aligned, uninitialised, NULL when memory
 * is exhausted (or bytes is absurd). tp_temp_free(p): p from tp_temp_alloc
 * on the same thread, or NULL. Frees may come in any order: bytes go back
 * to the stack once everything above them is free. A request the block
 * cannot hold is mapped by itself; when the thread's temporaries are all
 * free again the block is remapped at the high-water size, at most
 * TP_TEMP_KEEP_MAX (a request over it never counts: it is always mapped
 * alone). A thread's block is unmapped when it exits.
 *
 * Under AddressSanitizer every request is a plain malloc, so the sanitizer
 * still sees each temporary's bounds. */
#ifndef TP_BASE_TEMP_H
#define TP_BASE_TEMP_H

#include <stddef.h>

#define TP_TEMP_KEEP_MAX ((size_t)32 << 20)

/* 0 under AddressSanitizer (plain mallocs, no block), else 1. */
#if defined(__SANITIZE_ADDRESS__)
#define TP_TEMP_POOLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_TEMP_POOLED 0
#endif
#endif
#ifndef TP_TEMP_POOLED
#define TP_TEMP_POOLED 1
#endif

void *tp_temp_alloc(size_t bytes);
void tp_temp_free(void *p);

/* Tests: bytes of the calling thread's block (0 before its first request),
 * and how many mappings the thread has made for temporaries. */
size_t tp_temp_block_bytes(void);
size_t tp_temp_map_count(void);

#endif
