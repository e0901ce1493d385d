#define _GNU_SOURCE
#include "CSystemShims.h"

#ifdef __linux__
#include <pthread.h>
#include <malloc.h>
#include <sched.h>
#include <string.h>

int c_system_shims_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = 0;
    return pthread_setname_np(pthread_self(), cut);
}

void c_system_shims_return_large_frees(void) {
#ifdef __GLIBC__
    // Setting it by hand turns off the dynamic adjustment (mallopt(3), M_MMAP_THRESHOLD).
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

void c_system_shims_trim_heap(void) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

int c_system_shims_make_this_thread_idle(void) {
    struct sched_param none = {0};
    // pid 0 names the calling thread only: Linux schedules threads, not processes.
    return sched_setscheduler(0, SCHED_IDLE, &none);
}
#else
int c_system_shims_name_this_thread(const char *name) {
    (void)name;
    return 0;
}

int c_system_shims_make_this_thread_idle(void) {
    return 0;
}

void c_system_shims_return_large_frees(void) {}

void c_system_shims_trim_heap(void) {}
#endif
