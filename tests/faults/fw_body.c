/*
 * The body of a section, and the two faults a worker stages on itself from
 * inside one: a "GC pause" (the whole process stopped between the read and
 * the write, past its lease) and a kill mid-section.
 *
 * Before stopping or being killed, the process is quiesced: no thread of it
 * may be inside a store operation (holding the store's mutex or half-way
 * through a write and its log line), so a frozen or dead process leaves the
 * store consistent and unlocked.  Other threads of the process that reach a
 * store operation meanwhile just wait — inside their own sections, holding
 * their own locks, which is what a stopped or killed process does anyway.
 */
#include <lockweave.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "fw_worker.h"

static int freezing; /* atomic: a victim thread is preparing the process */
static int in_store; /* atomic: threads inside a store operation */

static void enter_store(void)
{
    for (;;) {
        __atomic_add_fetch(&in_store, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&freezing, __ATOMIC_SEQ_CST))
            return;
        __atomic_sub_fetch(&in_store, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&freezing, __ATOMIC_SEQ_CST))
            fw_sleep_us(1000);
    }
}

static void leave_store(void)
{
    __atomic_sub_fetch(&in_store, 1, __ATOMIC_SEQ_CST);
}

/* Claim the driver's request, if any, and act on it here, inside the
 * section.  Only one thread of all processes wins the CAS. */
static void fault_hook(struct fw_shared *s)
{
    int req = __atomic_load_n(&s->request, __ATOMIC_ACQUIRE);

    if (req == FW_REQ_NONE ||
        !__atomic_compare_exchange_n(&s->request, &req, FW_REQ_NONE, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    __atomic_store_n(&freezing, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&in_store, __ATOMIC_SEQ_CST) != 0)
        fw_sleep_us(100);
    __atomic_store_n(&s->victim_pid, (int32_t)getpid(), __ATOMIC_RELEASE);
    if (req == FW_REQ_PAUSE) {
        /* Stop the whole process, watchdog included, as a stop-the-world
         * pause would; the driver sends SIGCONT after more than a lease. */
        raise(SIGSTOP);
    } else {
        /* Wait for the driver's SIGKILL; give up after 30 s so that a
         * vanished driver cannot leave us here. */
        for (int i = 0; i < 3000; i++)
            fw_sleep_us(10000);
    }
    __atomic_store_n(&freezing, 0, __ATOMIC_SEQ_CST);
}

/* A reader's read; FW_REJECTED if refused. */
static int shared_read(struct fw_shared *s, int key, uint64_t fence,
                       uint64_t sid)
{
    int64_t value;
    enter_store();
    int rc = fw_store_read_shared(s, key, fence, sid, &value);
    leave_store();
    return rc;
}

int fw_section_body(struct fw_thread *t, int key, uint64_t fence, int guarded,
                    int role)
{
    struct fw_shared *s = t->shared;
    char line[160];
    int64_t value = 0;
    int n;

    /* The start record goes out before anything else the section does: a
     * section killed later still shows when it began. */
    t->entered = 1;
    n = snprintf(line, sizeof line,
                 "B %" PRIu64 " %d %" PRIu64 " %" PRId64 " %c\n", t->sid, key,
                 fence, fw_now_ns(), role);
    fw_write_all(t->log_fd, line, (size_t)n);

    if (role == FW_ROLE_PERMIT) {
        /* N holders at once: a read-modify-write would mean nothing. */
        t->read_rc = FW_SKIPPED;
    } else if (role == FW_ROLE_READER) {
        t->read_rc = shared_read(s, key, fence, t->sid);
    } else {
        enter_store();
        t->read_rc = fw_store_read(s, key, fence, t->sid, &value);
        leave_store();
    }
    fault_hook(s);
    /* The work: up to 0.5 ms, and one section in 32 up to 100 ms, so that
     * every fault finds sections in flight. */
    fw_sleep_us((long)(fw_rand(t) % (fw_rand(t) % 32 ? 500 : 100000)));
    t->still_held = guarded ? lw_still_held() : -1;
    t->write_rc = FW_SKIPPED;
    if (role == FW_ROLE_READER) {
        /* Read again at the end: a writer that got in meanwhile (with a
         * higher fence) makes what this reader read stale. */
        if (t->read_rc == FW_ACCEPTED)
            t->read_rc = shared_read(s, key, fence, t->sid);
    } else if (role != FW_ROLE_PERMIT && t->read_rc == FW_ACCEPTED) {
        enter_store();
        t->write_rc =
            fw_store_write(s, key, fence, t->sid, value + 1, t->store_fd);
        leave_store();
    }
    /* The end record, too, goes out from inside the body: a process killed
     * after this section's body but before its call returned must not make
     * the section look as if it lasted until the kill. */
    t->end_ns = fw_now_ns();
    n = snprintf(line, sizeof line, "e %" PRIu64 " %" PRId64 " %d %d\n", t->sid,
                 t->end_ns, t->read_rc, t->write_rc);
    fw_write_all(t->log_fd, line, (size_t)n);
    return 0;
}

uint64_t fw_rand(struct fw_thread *t)
{
    uint64_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return t->rng = x;
}
