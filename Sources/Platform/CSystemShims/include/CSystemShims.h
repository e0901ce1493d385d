// System headers, calls and CPU instructions that Swift cannot reach: epoll, naming a thread, the
// CRC-32C instruction, malloc's options, and Foundation's URL host check as upstream fixed it.
#ifndef C_SYSTEM_SHIMS_H
#define C_SYSTEM_SHIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __linux__
#include <sys/epoll.h>
#endif

/// Names the calling thread for the kernel (`top -H`, `perf`, /proc), at most 15 bytes kept.
/// `pthread_setname_np` needs _GNU_SOURCE, which the Glibc module is built without.
int c_system_shims_name_this_thread(const char *_Nonnull name);

/// Puts the calling thread in Linux's SCHED_IDLE class: it runs only on a core nothing else wants,
/// and any ordinary thread that wakes takes the core from it at once (a nice value only lowers its
/// share of a busy core). Returns 0, or -1 with errno; elsewhere it does nothing and returns 0.
int c_system_shims_make_this_thread_idle(void);

/// Whether this CPU has a CRC-32C instruction that `c_system_shims_crc32c_update` uses.
int c_system_shims_crc32c_available(void);

/// CRC-32C (Castagnoli, reflected) of `count` bytes continued from the register value `crc`,
/// without the initial and final inversion: only to be called when `c_system_shims_crc32c_available`.
uint32_t c_system_shims_crc32c_update(uint32_t crc, const void *_Nonnull bytes, size_t count);

/// Has glibc's malloc serve every allocation of 128 KB or more with its own mapping, returned to
/// the kernel when freed, instead of raising that threshold after the first large free (its
/// default), which leaves a start's large transient buffers in the heap for good. Elsewhere it
/// does nothing.
void c_system_shims_return_large_frees(void);

/// Gives the kernel back the whole free pages inside glibc's heaps (`malloc_trim(0)`): memory a
/// burst left free between live allocations, which malloc keeps resident otherwise. Elsewhere it
/// does nothing.
void c_system_shims_trim_heap(void);

/// FoundationNetworking's check that libcurl reads `url`'s host as `expectedHost`, as upstream
/// fixed it (url_host_check.c): the executable exports it in place of Swift 6.3.1's, which leaks.
/// Declared here so that tests can call it; only on Linux.
#ifdef __linux__
bool CFURLSessionCurlHostIsEqual(const char *_Nonnull url, const char *_Nonnull expectedHost);
#endif
/// Which `CFURLSessionCurlHostIsEqual` the dynamic linker gives a library that calls it: 1 this
/// process's (exported by the executable), 2 another (FoundationNetworking's own, which leaks:
/// the export was lost), 0 none (not Linux, or no FoundationNetworking loaded).
int c_system_shims_url_host_check_binding(void);

#endif
