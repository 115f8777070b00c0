/* What the process costs: CPU from getrusage (all threads, so the watchdog's
 * included), RSS from /proc/self/statm, another process's CPU from /proc. */
#include "mb.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

double mb_cpu_self_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double mb_cpu_pid_s(long pid)
{
    char path[64];
    unsigned long ut, st;
    FILE *f;
    int n;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    /* Fields 14 and 15 (utime, stime); the name in field 2 has no spaces for
     * redis-server, so plain scanning is enough. */
    n = fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st);
    fclose(f);
    if (n != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long mb_rss_bytes(void)
{
    long size, resident;
    FILE *f = fopen("/proc/self/statm", "r");
    int n;

    if (f == NULL)
        return -1;
    n = fscanf(f, "%ld %ld", &size, &resident);
    fclose(f);
    return n == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}
