#define _GNU_SOURCE
#include "CSystemShims.h"

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <string.h>

int c_system_shims_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = 0;
    return pthread_setname_np(pthread_self(), cut);
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
#endif
