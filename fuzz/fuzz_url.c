/*
 * Fuzz the LOCKWEAVE_REDIS_URL parser (runtime/url.c) through the functions
 * url.h declares: one URL (lw__url_parse) and the whole value, a Redlock
 * list or cluster seeds (lw__endpoints_parse), each parsed URL described
 * and copied.  struct lw_url's fields are left alone: they are the
 * parser's business.  Checked besides the sanitizers: a failure always says
 * why (a NUL-terminated reason in err) and never with a password in it, a
 * failed parse leaves nothing behind (freeing it must be harmless), and a
 * parsed URL describes itself into any size of buffer.
 */
#include "base/url.h"

#include <lockweave.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Error messages are logged, so they must not carry a password.  The check
 * needs no knowledge of how the parser splits a URL: when "SECRET" occurs
 * once, after the "://" and before the last '@', with no '/', '?' or '#'
 * in between, it sits where a user writes credentials, and no error message
 * may repeat it (the messages never say "SECRET" on their own).
 */
static int secret_in_credentials(const char *s)
{
    const char *sec = strstr(s, "SECRET");
    const char *scheme = strstr(s, "://");
    const char *at = strrchr(s, '@');

    if (sec == NULL || strstr(sec + 1, "SECRET") != NULL || scheme == NULL ||
        at == NULL || sec < scheme + 3 || sec + 6 > at)
        return 0;
    for (const char *q = scheme + 3; q < sec; q++)
        if (*q == '/' || *q == '?' || *q == '#')
            return 0;
    return 1;
}

static void check_error(const char *s, int rc, const char *err, size_t errlen)
{
    if (memchr(err, '\0', errlen) == NULL ||
        (rc == LW_ECONFIG && err[0] == '\0'))
        abort();
    if (secret_in_credentials(s) && strstr(err, "SECRET") != NULL) {
        fprintf(stderr, "fuzz_url: password in an error message: %s\n", err);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lw_url u;
    char err[256], desc[512];
    char *s = malloc(size + 1);
    int rc;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0'; /* the URL comes from getenv() or lw_config: a C string */

    memset(err, 'x', sizeof err);
    rc = lw__url_parse(s, &u, err, sizeof err);
    if (rc == LW_OK) {
        lw__url_describe(&u, desc, sizeof desc);
        if (memchr(desc, '\0', sizeof desc) == NULL)
            abort();
        /* Any buffer size truncates cleanly (a log line's remaining room). */
        for (size_t len = 0; len < 24; len += 7) {
            char small[24];
            lw__url_describe(&u, small, len);
        }
    } else {
        check_error(s, rc, err, sizeof err);
    }
    lw__url_free(&u);

    /* The whole value: one URL, a Redlock list or cluster seeds. */
    struct lw_endpoints e;
    memset(err, 'x', sizeof err);
    rc = lw__endpoints_parse(s, &e, err, sizeof err);
    if (rc == LW_OK) {
        if (e.n < 1 || e.n > LW_ENDPOINTS_MAX)
            abort();
        for (int i = 0; i < e.n; i++) {
            struct lw_url c;
            lw__url_describe(&e.urls[i], desc, sizeof desc);
            if (lw__url_copy(&c, &e.urls[i]) == LW_OK)
                lw__url_free(&c);
        }
    } else {
        check_error(s, rc, err, sizeof err);
    }
    lw__endpoints_free(&e);
    free(s);
    return 0;
}
