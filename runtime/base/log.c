/* The logging hook: one sink for the whole process, stderr by default, level
 * from $LOCKWEAVE_LOG so operators can turn on debug without a rebuild; and
 * what a line must not carry (control bytes, lock tokens). */
#include "base/log.h"

#include <lockweave.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static lw_log_fn log_fn;
static void *log_ud;
int lw__log_min = -1; /* see log.h; set from LOCKWEAVE_LOG in log_once */

static const char *const level_names[] = {"debug", "info", "warn", "error",
                                          "off"};

/* LOCKWEAVE_LOG named no level: said once, right after initialization
 * (logging from inside pthread_once() would wait on itself). */
static int env_level_bad;

static void log_init_from_env(void)
{
    const char *v = getenv("LOCKWEAVE_LOG");
    int level = LW_LOG_WARN;

    for (int i = LW_LOG_DEBUG; v != NULL && i <= LW_LOG_OFF; i++)
        if (strcasecmp(v, level_names[i]) == 0) {
            level = i;
            v = NULL;
        }
    env_level_bad = v != NULL;
    __atomic_store_n(&lw__log_min, level, __ATOMIC_RELAXED);
}

/* Read LOCKWEAVE_LOG if nothing has, and say at once (to the sink in
 * place now) if it named no level. */
static void log_init(void)
{
    pthread_once(&log_once, log_init_from_env);
    if (__atomic_exchange_n(&env_level_bad, 0, __ATOMIC_RELAXED))
        lw__log(LW_LOG_WARN,
                "ignoring LOCKWEAVE_LOG=%s: not debug, info, warn, error or "
                "off",
                getenv("LOCKWEAVE_LOG"));
}

int lw__log_start(void)
{
    log_init();
    return __atomic_load_n(&lw__log_min, __ATOMIC_RELAXED);
}

void lw_set_logger(lw_log_fn fn, void *ud, int min_level)
{
    pthread_once(&log_once, log_init_from_env);
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_ud = ud;
    if (min_level >= LW_LOG_DEBUG && min_level <= LW_LOG_OFF)
        __atomic_store_n(&lw__log_min, min_level, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&log_mu);
    log_init(); /* a bad LOCKWEAVE_LOG is told to the new sink */
}

/* msg with every byte outside printable ASCII as \xNN and '\' doubled:
 * keys, replies and error texts come from users and servers, and a
 * newline or a terminal escape in one must not forge or hide a log line. */
static void escape(const char *msg, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if (n + 5 > cap)
            break;
        if (*p == '\\') {
            out[n++] = '\\';
            out[n++] = '\\';
        } else if (*p >= 0x20 && *p < 0x7f) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = '\0';
}

void lw__log_mask_tokens(const char *s, char *out, size_t cap)
{
    size_t n = 0;

    while (*s && n + 8 < cap) {
        size_t run = strspn(s, "0123456789abcdefABCDEF");
        if (run >= 16) {
            memcpy(out + n, s, 4);
            memcpy(out + n + 4, "...", 3);
            n += 7;
            s += run;
        } else {
            out[n++] = *s++;
        }
    }
    out[n] = '\0';
}

void lw__log(int level, const char *fmt, ...)
{
    char msg[512], line[4 * sizeof msg];
    va_list ap;

    log_init();
    /* A racy read is fine for the fast "disabled" answer; the sink itself is
     * read under the mutex so fn and ud always match. */
    if (level < __atomic_load_n(&lw__log_min, __ATOMIC_RELAXED))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    escape(msg, line, sizeof line);

    pthread_mutex_lock(&log_mu);
    if (log_fn != NULL)
        log_fn(level, line, log_ud);
    else
        fprintf(stderr, "lockweave: %s: %s\n", level_names[level], line);
    pthread_mutex_unlock(&log_mu);
}
