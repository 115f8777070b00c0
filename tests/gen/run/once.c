/* REDIS_ONCE through woven wrappers, against a real redis-server: one body
 * for duplicates from several processes (all get its result), failed_if
 * leaving the key for a retry, each result type read back exactly, and a
 * struct's later callers given on_fail. */
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen_check.h"

struct shared {
    int runs;
    int oks, dones;
    int64_t got[8];
};
static struct shared *sh;

struct receipt {
    int64_t id;
    int cents;
};

REDIS_ONCE("once:order:{id}", 1m, wait = 30s)
int64_t charge(int64_t id, int cents)
{
    __atomic_add_fetch(&sh->runs, 1, __ATOMIC_SEQ_CST);
    usleep(200000); /* the others arrive while it runs */
    return id * 100 + cents;
}

REDIS_ONCE("once:pay:{id}", 1m, failed_if = lw_result < 0, on_fail = -99)
int pay(int id)
{
    __atomic_add_fetch(&sh->runs, 1, __ATOMIC_SEQ_CST);
    return id;
}

REDIS_ONCE("once:u:{id}", 1m)
uint64_t big(int id)
{
    return UINT64_MAX - (uint64_t)id;
}

REDIS_ONCE("once:d:{id}", 1m)
double third(int id)
{
    return id / 3.0;
}

REDIS_ONCE("once:b:{id}", 1m)
bool positive(int id)
{
    return id > 0;
}

REDIS_ONCE("once:r:{id}", 1m, on_fail = (struct receipt){-1, 0})
struct receipt make_receipt(int64_t id)
{
    struct receipt r = {id, 5};
    return r;
}

int main(void)
{
    pid_t kids[8];

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);
    /* Duplicates at once, from 8 processes. */
    for (int i = 0; i < 8; i++) {
        kids[i] = fork();
        CHECK(kids[i] >= 0);
        if (kids[i] == 0) {
            int64_t v = charge(42, i);
            int e = lw_last_error();
            sh->got[i] = v;
            __atomic_add_fetch(e == LW_OK ? &sh->oks : &sh->dones, 1,
                               __ATOMIC_SEQ_CST);
            lw_shutdown();
            _exit(e == LW_OK || e == LW_EDONE ? 0 : 1);
        }
    }
    for (int i = 0; i < 8; i++) {
        int st;
        CHECK_EQ(waitpid(kids[i], &st, 0), kids[i]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_EQ(sh->runs, 1);
    CHECK_EQ(sh->oks, 1);
    CHECK_EQ(sh->dones, 7);
    for (int i = 1; i < 8; i++)
        CHECK_EQ(sh->got[i], sh->got[0]);
    /* A later duplicate from this process. */
    CHECK_EQ(charge(42, 99), sh->got[0]);
    CHECK_EQ(lw_last_error(), LW_EDONE);

    /* failed_if: the run failed, the key is free, the retry runs. */
    sh->runs = 0;
    CHECK_EQ(pay(-5), -5);
    CHECK_EQ(lw_last_error(), LW_OK);
    CHECK_EQ(pay(-5), -5);
    CHECK_EQ(sh->runs, 2);

    /* Result types, exact. */
    CHECK(big(0) == UINT64_MAX && lw_last_error() == LW_OK);
    CHECK(big(0) == UINT64_MAX && lw_last_error() == LW_EDONE);
    CHECK(third(1) == 1 / 3.0 && lw_last_error() == LW_OK);
    CHECK(third(1) == 1 / 3.0 && lw_last_error() == LW_EDONE);
    CHECK(positive(3) && lw_last_error() == LW_OK);
    CHECK(positive(3) && lw_last_error() == LW_EDONE);
    /* A struct: ran once; its later callers get on_fail. */
    CHECK_EQ(make_receipt(7).cents, 5);
    CHECK_EQ(make_receipt(7).id, -1);
    CHECK_EQ(lw_last_error(), LW_EDONE);
    lw_shutdown();
    printf("gen once: ok\n");
    return 0;
}
