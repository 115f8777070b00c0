/* skip_if (checked before and under the lock), on_fail, max_renew. */
#include <time.h>

#include "gen_check.h"

static int body_runs, checks;
static int done_after; /* skip_if turns true from this check on */

static int already_done(int job)
{
    (void)job;
    return ++checks >= done_after;
}

REDIS_LOCK("job:{job}", 2s, 0, skip_if = already_done(job), on_fail = -5)
int run_job(int job)
{
    body_runs++;
    return job;
}

REDIS_LOCK("busy:{id}", 2s, 100ms, on_fail = -1)
int busy(int id)
{
    body_runs++;
    return id;
}

REDIS_LOCK("busyp:{id}", 2s, 0)
const char *busy_default(int id)
{
    (void)id;
    return "ran";
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static int held_at_end = -1;
REDIS_LOCK("renew:{id}", 300ms, 0, max_renew = 1)
void long_job(int id)
{
    (void)id;
    CHECK(lw_still_held() == 1);
    sleep_ms(1500); /* outlives 300ms + one renewal */
    held_at_end = lw_still_held();
}

/* A lease of seconds, not 300 ms: the watchdog renews it at a third of
 * the lease, and a loaded machine may keep that thread from running for a
 * few hundred milliseconds; the body still outlives the lease. */
REDIS_LOCK("renew2:{id}", 2s, 0)
void long_job_unlimited(int id)
{
    (void)id;
    sleep_ms(3000);
    held_at_end = lw_still_held();
}

int main(void)
{
    /* Done before locking: no lock, body not run, on_fail, status OK. */
    done_after = 1;
    checks = 0;
    CHECK(run_job(1) == -5);
    CHECK(body_runs == 0 && checks == 1);
    CHECK(lw_last_error() == LW_OK);

    /* Done by someone else while we waited: the second check, under the
     * lock, stops the body; the lock is released. */
    done_after = 2;
    checks = 0;
    CHECK(run_job(2) == -5);
    CHECK(body_runs == 0 && checks == 2);
    CHECK(lw_last_error() == LW_OK);
    CHECK(key_busy("job:2") == 0);

    /* Not done: the body runs. */
    done_after = 100;
    checks = 0;
    CHECK(run_job(3) == 3);
    CHECK(body_runs == 1 && checks == 2);

    /* Busy lock: the body does not run, on_fail comes back. */
    struct gen_holder h;
    CHECK(gen_hold(&h, "busy:9") == 0);
    CHECK(busy(9) == -1);
    CHECK(lw_last_error() == LW_ETIMEOUT);
    CHECK(body_runs == 1);
    gen_release(&h);
    CHECK(busy(9) == 9);
    CHECK(lw_last_error() == LW_OK);

    /* Default on_fail is the zero value (NULL here). */
    CHECK(gen_hold(&h, "busyp:1") == 0);
    CHECK(busy_default(1) == NULL);
    CHECK(lw_last_error() == LW_ETIMEOUT);
    gen_release(&h);

    /* max_renew: the watchdog stops, the lease runs out, the caller sees
     * LW_ELOST. */
    long_job(1);
    CHECK(held_at_end == 0);
    CHECK(lw_last_error() == LW_ELOST);
    /* Unlimited renewals keep it. */
    long_job_unlimited(1);
    CHECK(held_at_end == 1);
    CHECK(lw_last_error() == LW_OK);
    return gen_done("gen_run_options");
}
