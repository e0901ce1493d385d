// System headers that Swift's Glibc module does not export (epoll), exposed to HTTPServer.
#ifndef C_SYSTEM_SHIMS_H
#define C_SYSTEM_SHIMS_H

#ifdef __linux__
#include <sys/epoll.h>
#endif

#endif
