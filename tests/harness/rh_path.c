/* Locating redis-server before forking, so that a missing server is reported
 * as such rather than as "did not answer PING". */
#include "redis_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int executable(const char *p)
{
    return access(p, X_OK) == 0;
}

const char *rh_server_path(void)
{
    static char found[4096];
    const char *env = getenv("LW_REDIS_SERVER");
    if (env && *env)
        return executable(env) ? env : NULL;

    const char *path = getenv("PATH");
    if (path) {
        const char *p = path;
        while (*p) {
            const char *end = strchr(p, ':');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            if (n > 0 && n < sizeof found - 16) {
                snprintf(found, sizeof found, "%.*s/redis-server", (int)n, p);
                if (executable(found))
                    return found;
            }
            if (!end)
                break;
            p = end + 1;
        }
    }
    /* ctest may run with a reduced PATH; Debian puts it in /usr/bin. */
    static const char *const usual[] = {"/usr/bin/redis-server",
                                        "/usr/local/bin/redis-server",
                                        "/usr/sbin/redis-server"};
    for (size_t i = 0; i < sizeof usual / sizeof usual[0]; i++)
        if (executable(usual[i]))
            return usual[i];
    return NULL;
}

const char *rh_sentinel_path(void)
{
    static char found[4096];
    const char *srv = rh_server_path();
    const char *slash = srv ? strrchr(srv, '/') : NULL;

    if (slash != NULL) {
        snprintf(found, sizeof found, "%.*s/redis-sentinel", (int)(slash - srv),
                 srv);
        if (executable(found))
            return found;
    }
    return executable("/usr/bin/redis-sentinel") ? "/usr/bin/redis-sentinel"
                                                 : NULL;
}
