/* fork() hooks (base/fork.c) for a module that registers while a fork is
 * under way, as a thread losing its first lock does while another forks:
 * the parent and the child undo exactly what the prepare step did.  Here
 * the registration happens inside a prepare hook, so that it falls in
 * that window every time: the hook registered then has no prepare run at
 * this fork, so its parent and child hooks must not run either (they
 * would release what it never took).  At the next fork it runs whole. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fork.h"
#include "check.h"

static int late_prepared, late_parent_ran, late_child_ran;

static void late_prepare(void)
{
    late_prepared = 1;
}

static void late_parent(void)
{
    late_parent_ran = 1;
}

static void late_child(void)
{
    late_child_ran = 1;
}

static const struct lw_fork_hooks late = {late_prepare, late_parent,
                                          late_child};

/* Every fork's prepare: the late hook registered mid-fork (once). */
static void register_late(void)
{
    lw__fork_register(&late);
}

static const struct lw_fork_hooks early = {register_late, NULL, NULL};

/* Fork; the child exits 1 when the late hook's child hook ran in it.
 * Returns the child's exit status. */
static int fork_once(void)
{
    pid_t pid = fork();
    int status;

    CHECK(pid >= 0);
    if (pid == 0)
        _exit(late_child_ran);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

int main(void)
{
    int child_ran;

    lw__fork_register(&early);
    child_ran = fork_once();
    CHECK_MSG(!late_prepared && !late_parent_ran,
              "a hook registered during the fork: prepare %d, parent %d",
              late_prepared, late_parent_ran);
    CHECK_MSG(child_ran == 0,
              "a hook registered during the fork had its child hook run");
    /* Registered by now: the next fork runs all three. */
    child_ran = fork_once();
    CHECK(late_prepared && late_parent_ran);
    CHECK_EQ(child_ran, 1);
    printf("unit_fork: ok\n");
    return 0;
}
