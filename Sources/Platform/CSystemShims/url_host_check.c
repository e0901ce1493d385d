// FoundationNetworking's `CFURLSessionCurlHostIsEqual`, as swift-corelibs-foundation fixed it on
// 2026-07-01 (c8c342068, #5498): the copy in Swift 6.3.1 frees libcurl's URL handle with
// `curl_free` instead of `curl_url_cleanup`, so every URLSession request leaks the URL's parts
// (43 bytes a call to Apple's attribution API, measured with heaptrack; docs/PERFORMANCE.md).
// URLSession calls this function through its library's PLT, and the executable exports this
// definition (Package.swift), so the dynamic linker binds that call here instead. libcurl is the
// one Foundation already loaded: its functions are looked up by name, nothing new is linked.
// Remove this file once the toolchain carries the fix.
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

typedef struct Curl_URL CURLU;
// libcurl's `CURLUPart` values (curl/urlapi.h).
enum { url_part_url = 0, url_part_host = 5 };

static struct {
    CURLU *(*make)(void);
    void (*cleanup)(CURLU *);
    int (*set)(CURLU *, int, const char *, unsigned int);
    int (*get)(const CURLU *, int, char **, unsigned int);
    void (*release)(void *);
} curl;
static pthread_once_t curl_found = PTHREAD_ONCE_INIT;

static void find_curl(void) {
    curl.make = (CURLU *(*)(void))dlsym(RTLD_DEFAULT, "curl_url");
    curl.cleanup = (void (*)(CURLU *))dlsym(RTLD_DEFAULT, "curl_url_cleanup");
    curl.set = (int (*)(CURLU *, int, const char *, unsigned int))dlsym(RTLD_DEFAULT, "curl_url_set");
    curl.get = (int (*)(const CURLU *, int, char **, unsigned int))dlsym(RTLD_DEFAULT, "curl_url_get");
    curl.release = (void (*)(void *))dlsym(RTLD_DEFAULT, "curl_free");
}

__attribute__((visibility("default")))
bool CFURLSessionCurlHostIsEqual(const char *url, const char *expectedHost) {
    pthread_once(&curl_found, find_curl);
    // Without libcurl's URL API there is no second opinion to ask, as with a libcurl before 7.62.
    if (!curl.make || !curl.cleanup || !curl.set || !curl.get || !curl.release) return true;
    bool isEqual = false;
    CURLU *h = curl.make();
    if (h == NULL) return false;
    if (curl.set(h, url_part_url, url, 0) == 0) {
        char *curlHost = NULL;
        if (curl.get(h, url_part_host, &curlHost, 0) == 0) {
            // libcurl keeps an IPv6 literal in brackets; URL.host does not.
            const char *host = curlHost;
            size_t hostLen = strlen(curlHost);
            if (hostLen >= 2 && host[0] == '[' && host[hostLen - 1] == ']') {
                host += 1;
                hostLen -= 2;
            }
            isEqual = hostLen == strlen(expectedHost) && strncmp(host, expectedHost, hostLen) == 0;
            curl.release(curlHost);
        }
    }
    curl.cleanup(h);
    return isEqual;
}

int c_system_shims_url_host_check_binding(void) {
    void *bound = dlsym(RTLD_DEFAULT, "CFURLSessionCurlHostIsEqual");
    if (bound == NULL) return 0;
    return bound == (void *)CFURLSessionCurlHostIsEqual ? 1 : 2;
}
#else
int c_system_shims_url_host_check_binding(void) { return 0; }
#endif
