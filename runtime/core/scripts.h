#ifndef LW_SCRIPTS_H
#define LW_SCRIPTS_H

#include "net/script.h"

/* The Lua scripts that make each lock step atomic on the server, each kind's
 * beside it (kind_mutex.c, kind_read.c, kind_sem.c: their KEYS, ARGV and
 * replies are described beside their text; lua.h has what they share). */
extern struct lw_script lw__script_renew;      /* a batch of leases */
extern struct lw_script lw__script_release;    /* delete and hand off */
extern struct lw_script lw__script_enqueue;    /* take, or queue for, a lock */
extern struct lw_script lw__script_try;        /* take a free lock */
extern struct lw_script lw__script_onekey;     /* renew or delete one key */
extern struct lw_script lw__script_handfences; /* fences for local hand-offs */
extern struct lw_script lw__script_handmore;   /* check a loop's run, go on */
extern struct lw_script lw__script_owned;      /* is the lock still ours? */
extern struct lw_script lw__script_batch;      /* many tries and releases */
/* The same for a semaphore (permits = N): a sorted set of leased permits. */
extern struct lw_script lw__script_sem_enqueue;
extern struct lw_script lw__script_sem_release;
extern struct lw_script lw__script_sem_renew;
/* A read lock (mode = read): readers share the lock key's LW_READ_MARK. */
extern struct lw_script lw__script_rw_enqueue;
extern struct lw_script lw__script_rw_release;
extern struct lw_script lw__script_rw_renew; /* one lease */
/* Fewer keys, nobody told: for a slot being migrated, where a script's keys
 * may lie on two nodes. */
extern struct lw_script lw__script_sem_leave; /* a permit, by its key alone */
extern struct lw_script lw__script_rw_leave;  /* a reader, by its set */
extern struct lw_script lw__script_rw_mark;   /* a read lock's key alone */
/* Run once (REDIS_ONCE, kind_once.c): a mark taken as a mutex, which a run
 * that succeeded turns into its outcome. */
extern struct lw_script lw__script_once_try;
extern struct lw_script lw__script_once_enqueue;
extern struct lw_script lw__script_once_done;

/* Every script above, NULL-terminated (kind.c): for the tests that check
 * each one's SHA and the commands it calls. */
extern struct lw_script *const lw__scripts[];

#endif
