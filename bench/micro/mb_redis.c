/* The benchmark's own view of Redis: INFO counters show what the runtime
 * really sent, whatever the runtime's own statistics say. */
#include "mb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

redisContext *mb_redis_connect(void)
{
    const char *url = getenv("LOCKWEAVE_REDIS_URL");
    char host[128];
    int port;
    redisContext *c;

    if (url == NULL || sscanf(url, "redis://%127[^:/]:%d", host, &port) != 2)
        mb_die("LOCKWEAVE_REDIS_URL must be redis://host:port (run me "
               "through bench/micro/run.sh or lw_with_redis)");
    c = redisConnect(host, port);
    if (c == NULL || c->err)
        mb_die("cannot connect to the benchmark's redis-server");
    return c;
}

static char *info(redisContext *c, const char *section)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    char *s;

    if (r == NULL || r->type != REDIS_REPLY_STRING)
        mb_die("INFO failed");
    s = strdup(r->str);
    freeReplyObject(r);
    return s;
}

long long mb_cmdstat_calls(redisContext *c, const char *cmd)
{
    char *text = info(c, "commandstats"), *line, *save = NULL;
    long long total = 0;

    /* Lines read: cmdstat_evalsha:calls=12,usec=...  */
    for (line = strtok_r(text, "\r\n", &save); line != NULL;
         line = strtok_r(NULL, "\r\n", &save)) {
        char name[64];
        long long calls;
        if (sscanf(line, "cmdstat_%63[^:]:calls=%lld", name, &calls) != 2)
            continue;
        if (cmd != NULL ? strcmp(name, cmd) == 0 : strcmp(name, "info") != 0)
            total += calls;
    }
    free(text);
    return total;
}

long long mb_info_int(redisContext *c, const char *field)
{
    char *text = info(c, "all"), *p;
    size_t n = strlen(field);
    long long v = -1;

    for (p = text; (p = strstr(p, field)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ':') {
            v = strtoll(p + n + 1, NULL, 10);
            break;
        }
    free(text);
    return v;
}
