/* Every server this process started, remembered by value (not by pointer to
 * the caller's rh_server, which may be a dead stack frame by the time exit
 * handlers run), so that a test leaving through exit() -- a failed CHECK --
 * still stops its servers.  Forked children inherit the list but are not the
 * owner, so their exit leaves the parent's servers alone. */
#include "rh_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RH_MAX_SERVERS 32

static struct {
    pid_t pid;
    pid_t owner;
    char dir[128];
} reg[RH_MAX_SERVERS];
static int hooked;

static void stop_all(void)
{
    for (int i = 0; i < RH_MAX_SERVERS; i++) {
        if (reg[i].pid > 0 && reg[i].owner == getpid()) {
            rh__terminate(reg[i].pid, 3000);
            rh_remove_tree(reg[i].dir);
            reg[i].pid = 0;
        }
    }
}

void rh__registry_add(pid_t pid, const char *dir)
{
    if (!hooked) {
        atexit(stop_all);
        hooked = 1;
    }
    for (int i = 0; i < RH_MAX_SERVERS; i++) {
        if (reg[i].pid == 0) {
            reg[i].pid = pid;
            reg[i].owner = getpid();
            snprintf(reg[i].dir, sizeof reg[i].dir, "%s", dir);
            return;
        }
    }
    fprintf(stderr,
            "redis harness: more than %d servers; pid %d will not "
            "be stopped at exit\n",
            RH_MAX_SERVERS, (int)pid);
}

void rh__registry_remove(pid_t pid)
{
    for (int i = 0; i < RH_MAX_SERVERS; i++)
        if (reg[i].pid == pid)
            reg[i].pid = 0;
}
