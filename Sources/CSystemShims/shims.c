#define _GNU_SOURCE
#include "CSystemShims.h"

#ifdef __linux__
#include <pthread.h>
#include <string.h>

int c_system_shims_name_this_thread(const char *name) {
    char cut[16];
    strncpy(cut, name, sizeof cut - 1);
    cut[sizeof cut - 1] = 0;
    return pthread_setname_np(pthread_self(), cut);
}
#else
int c_system_shims_name_this_thread(const char *name) {
    (void)name;
    return 0;
}
#endif
