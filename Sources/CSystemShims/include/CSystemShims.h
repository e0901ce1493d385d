// System headers and calls that Swift's Glibc module does not export (epoll, naming a thread).
#ifndef C_SYSTEM_SHIMS_H
#define C_SYSTEM_SHIMS_H

#ifdef __linux__
#include <sys/epoll.h>
#endif

/// Names the calling thread for the kernel (`top -H`, `perf`, /proc), at most 15 bytes kept.
/// `pthread_setname_np` needs _GNU_SOURCE, which the Glibc module is built without.
int c_system_shims_name_this_thread(const char *name);

/// Puts the calling thread in Linux's SCHED_IDLE class: it runs only on a core nothing else wants,
/// and any ordinary thread that wakes takes the core from it at once (a nice value only lowers its
/// share of a busy core). Returns 0, or -1 with errno; elsewhere it does nothing and returns 0.
int c_system_shims_make_this_thread_idle(void);

#endif
