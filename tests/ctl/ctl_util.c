/* Running lockweave-ctl, and reading its JSON (ctl_util.h). */
#include "ctl_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ctl_path;
static int memcheck; /* $LW_CTL_MEMCHECK: run the command under valgrind */
void (*ctl_before_answer)(void);

void ctl_init(int argc, char **argv)
{
    CHECK_MSG(argc >= 2, "usage: %s PATH-TO-lockweave-ctl", argv[0]);
    ctl_path = argv[1];
    memcheck = getenv("LW_CTL_MEMCHECK") != NULL &&
               strcmp(getenv("LW_CTL_MEMCHECK"), "1") == 0;
    CHECK_MSG(access(ctl_path, X_OK) == 0, "%s: not executable", ctl_path);
    signal(SIGPIPE, SIG_IGN);
}

static void append(char **buf, size_t *len, const char *p, size_t n)
{
    char *b = realloc(*buf, *len + n + 1);

    CHECK(b != NULL);
    memcpy(b + *len, p, n);
    *len += n;
    b[*len] = '\0';
    *buf = b;
}

void ctl_run(struct ctl_run *r, const char *url, int in, const char *answer,
             ...)
{
    const char *argv[40];
    int argc = 0, first, out[2], err[2], tty = -1, tty_slave = -1, st;
    va_list ap;
    pid_t pid;

    /* test.sh's memcheck pass: the command itself under valgrind too (the
     * test's own valgrind does not follow exec). */
    if (memcheck) {
        static const char *const vg[] = {
            "valgrind",
            "-q",
            "--error-exitcode=97",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect",
            "--num-callers=40"};
        for (size_t i = 0; i < sizeof vg / sizeof vg[0]; i++)
            argv[argc++] = vg[i];
    }
    first = argc;
    argv[argc++] = ctl_path;
    va_start(ap, answer);
    while ((argv[argc] = va_arg(ap, const char *)) != NULL)
        CHECK(++argc < 39);
    va_end(ap);
    memset(r, 0, sizeof *r);
    append(&r->out, &r->outlen, "", 0);
    append(&r->err, &r->errlen, "", 0);
    CHECK(pipe(out) == 0 && pipe(err) == 0);
    if (in == CTL_IN_TTY)
        CHECK(openpty(&tty, &tty_slave, NULL, NULL, NULL) == 0);
    fflush(NULL);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int fd = in == CTL_IN_TTY ? tty_slave : open("/dev/null", O_RDONLY);
        if (fd < 0 || dup2(fd, 0) < 0 || dup2(out[1], 1) < 0 ||
            dup2(err[1], 2) < 0)
            _exit(126);
        if (url != NULL)
            setenv("LOCKWEAVE_REDIS_URL", url, 1);
        else
            unsetenv("LOCKWEAVE_REDIS_URL");
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (in == CTL_IN_TTY)
        close(tty_slave);
    for (int open_fds = 2; open_fds > 0;) {
        struct pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        char buf[65536];

        CHECK(poll(p, 2, 60000) > 0);
        for (int i = 0; i < 2; i++) {
            ssize_t n;
            if (p[i].fd < 0 || p[i].revents == 0)
                continue;
            n = read(p[i].fd, buf, sizeof buf);
            if (n <= 0) {
                close(i == 0 ? out[0] : err[0]);
                if (i == 0)
                    out[0] = -1;
                else
                    err[0] = -1;
                open_fds--;
            } else if (i == 0) {
                append(&r->out, &r->outlen, buf, (size_t)n);
            } else {
                append(&r->err, &r->errlen, buf, (size_t)n);
            }
        }
        if (tty >= 0 && answer != NULL && strstr(r->err, "[y/N]") != NULL) {
            if (ctl_before_answer != NULL)
                ctl_before_answer();
            CHECK(write(tty, answer, strlen(answer)) ==
                  (ssize_t)strlen(answer));
            answer = NULL;
        }
    }
    CHECK(waitpid(pid, &st, 0) == pid);
    if (tty >= 0)
        close(tty);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    printf("$ lockweave-ctl");
    for (int i = first + 1; i < argc; i++)
        printf(" %s", argv[i]);
    printf("  -> %d\n", r->status);
    printf("%.4000s%s", r->out, r->outlen > 4000 ? "...\n" : "");
    if (r->errlen > 0)
        printf("[stderr] %.2000s", r->err);
    fflush(stdout);
    /* What valgrind found in the command: a finding of the memcheck pass,
     * which counts a test killed by a signal as one (whatever its own
     * checks say: timing checks are not its business). */
    if (memcheck && r->status == 97) {
        fprintf(stderr, "valgrind found errors in lockweave-ctl:\n%s\n",
                r->err);
        abort();
    }
}

void ctl_run_free(struct ctl_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

int ctl_printable(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != '\n' && (p[i] < 0x20 || p[i] > 0x7e))
            return 0;
    return 1;
}

/* The reader: recursive descent over the text, failing on anything that is
 * not JSON (RFC 8259), control characters and bad UTF-8 in strings
 * included. */
struct rd {
    const unsigned char *p, *e;
    int depth;
};

static void ws(struct rd *d)
{
    while (d->p < d->e &&
           (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
        d->p++;
}

static jv *value(struct rd *d);

static jv *node(char type)
{
    jv *v = calloc(1, sizeof *v);

    CHECK(v != NULL);
    v->type = type;
    return v;
}

static void put_utf8(char **s, size_t *n, uint32_t cp)
{
    char b[4];
    size_t l;

    if (cp < 0x80)
        b[0] = (char)cp, l = 1;
    else if (cp < 0x800)
        b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 63)), l = 2;
    else if (cp < 0x10000)
        b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 63)),
        b[2] = (char)(0x80 | (cp & 63)), l = 3;
    else
        b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 63)),
        b[2] = (char)(0x80 | (cp >> 6 & 63)), b[3] = (char)(0x80 | (cp & 63)),
        l = 4;
    append(s, n, b, l);
}

static int hex4(struct rd *d, uint32_t *out)
{
    *out = 0;
    if (d->e - d->p < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = *d->p++;
        *out <<= 4;
        if (c >= '0' && c <= '9')
            *out |= c - '0';
        else if (c >= 'a' && c <= 'f')
            *out |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            *out |= c - 'A' + 10;
        else
            return 0;
    }
    return 1;
}

/* A string's bytes (after the opening quote); 0 when malformed. */
static int string(struct rd *d, char **s, size_t *n)
{
    *s = NULL;
    *n = 0;
    append(s, n, "", 0);
    while (d->p < d->e && *d->p != '"') {
        unsigned c = *d->p;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            d->p++;
            if (d->p >= d->e)
                return 0;
            c = *d->p++;
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *at = c ? strchr(from, (int)c) : NULL;
            if (at != NULL) {
                append(s, n, to + (at - from), 1);
            } else if (c == 'u') {
                uint32_t cp, lo;
                if (!hex4(d, &cp))
                    return 0;
                if (cp >= 0xd800 && cp < 0xdc00) {
                    if (d->e - d->p < 2 || d->p[0] != '\\' || d->p[1] != 'u')
                        return 0;
                    d->p += 2;
                    if (!hex4(d, &lo) || lo < 0xdc00 || lo > 0xdfff)
                        return 0;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return 0;
                }
                put_utf8(s, n, cp);
            } else {
                return 0;
            }
            continue;
        }
        /* UTF-8 as it is: check the sequence. */
        size_t need = c < 0x80                 ? 1
                      : c >= 0xc2 && c <= 0xdf ? 2
                      : c >= 0xe0 && c <= 0xef ? 3
                      : c >= 0xf0 && c <= 0xf4 ? 4
                                               : 0;
        if (need == 0 || (size_t)(d->e - d->p) < need)
            return 0;
        for (size_t i = 1; i < need; i++)
            if ((d->p[i] & 0xc0) != 0x80)
                return 0;
        append(s, n, (const char *)d->p, need);
        d->p += need;
    }
    if (d->p >= d->e)
        return 0;
    d->p++;
    return 1;
}

static jv *fail(jv *v)
{
    jv_free(v);
    return NULL;
}

static jv *container(struct rd *d, char close)
{
    jv *v = node(close == '}' ? 'o' : 'a');

    if (++d->depth > 64)
        return fail(v);
    ws(d);
    if (d->p < d->e && *d->p == (unsigned char)close) {
        d->p++;
        d->depth--;
        return v;
    }
    for (;;) {
        char *key = NULL;
        size_t klen;
        jv *item;

        ws(d);
        if (close == '}') {
            if (d->p >= d->e || *d->p != '"')
                return fail(v);
            d->p++;
            if (!string(d, &key, &klen)) {
                free(key);
                return fail(v);
            }
            ws(d);
            if (d->p >= d->e || *d->p != ':') {
                free(key);
                return fail(v);
            }
            d->p++;
        }
        item = value(d);
        if (item == NULL) {
            free(key);
            return fail(v);
        }
        v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
        v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys);
        CHECK(v->items != NULL && v->keys != NULL);
        v->items[v->n] = item;
        v->keys[v->n++] = key;
        ws(d);
        if (d->p < d->e && *d->p == ',') {
            d->p++;
            continue;
        }
        if (d->p < d->e && *d->p == (unsigned char)close) {
            d->p++;
            d->depth--;
            return v;
        }
        return fail(v);
    }
}

static int lit(struct rd *d, const char *w)
{
    size_t n = strlen(w);

    if ((size_t)(d->e - d->p) < n || memcmp(d->p, w, n) != 0)
        return 0;
    d->p += n;
    return 1;
}

static jv *number(struct rd *d)
{
    const unsigned char *start = d->p;
    char buf[64];
    jv *v;

    if (d->p < d->e && *d->p == '-')
        d->p++;
    if (d->p < d->e && *d->p == '0')
        d->p++;
    else if (d->p < d->e && *d->p >= '1' && *d->p <= '9')
        while (d->p < d->e && *d->p >= '0' && *d->p <= '9')
            d->p++;
    else
        return NULL;
    if (d->p < d->e && *d->p == '.') {
        d->p++;
        if (d->p >= d->e || *d->p < '0' || *d->p > '9')
            return NULL;
        while (d->p < d->e && *d->p >= '0' && *d->p <= '9')
            d->p++;
    }
    if (d->p < d->e && (*d->p == 'e' || *d->p == 'E')) {
        d->p++;
        if (d->p < d->e && (*d->p == '+' || *d->p == '-'))
            d->p++;
        if (d->p >= d->e || *d->p < '0' || *d->p > '9')
            return NULL;
        while (d->p < d->e && *d->p >= '0' && *d->p <= '9')
            d->p++;
    }
    if ((size_t)(d->p - start) >= sizeof buf)
        return NULL;
    memcpy(buf, start, (size_t)(d->p - start));
    buf[d->p - start] = '\0';
    v = node('n');
    v->num = strtod(buf, NULL);
    return v;
}

static jv *value(struct rd *d)
{
    jv *v;

    ws(d);
    if (d->p >= d->e)
        return NULL;
    switch (*d->p) {
    case '{':
        d->p++;
        return container(d, '}');
    case '[':
        d->p++;
        return container(d, ']');
    case '"':
        d->p++;
        v = node('s');
        return string(d, &v->s, &v->slen) ? v : fail(v);
    case 't':
    case 'f':
        v = node('b');
        v->b = *d->p == 't';
        return lit(d, v->b ? "true" : "false") ? v : fail(v);
    case 'n':
        v = node('z');
        return lit(d, "null") ? v : fail(v);
    default:
        return number(d);
    }
}

jv *jv_parse(const char *text, size_t len)
{
    struct rd d = {(const unsigned char *)text,
                   (const unsigned char *)text + len, 0};
    jv *v = value(&d);

    ws(&d);
    if (v != NULL && d.p != d.e)
        return fail(v);
    return v;
}

void jv_free(jv *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n; i++) {
        jv_free(v->items[i]);
        free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->s);
    free(v);
}

const jv *jv_get(const jv *v, const char *key)
{
    if (v == NULL || v->type != 'o')
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->items[i];
    return NULL;
}

long long jv_int(const jv *v, const char *key)
{
    const jv *m = jv_get(v, key);

    CHECK_MSG(m != NULL && m->type == 'n', "JSON: no number \"%s\"", key);
    return (long long)m->num;
}

const char *jv_str(const jv *v, const char *key)
{
    const jv *m = jv_get(v, key);

    CHECK_MSG(m != NULL && m->type == 's', "JSON: no string \"%s\"", key);
    return m->s;
}

int jv_bool(const jv *v, const char *key)
{
    const jv *m = jv_get(v, key);

    CHECK_MSG(m != NULL && m->type == 'b', "JSON: no bool \"%s\"", key);
    return m->b;
}

jv *ctl_json(const struct ctl_run *r)
{
    jv *v = jv_parse(r->out, r->outlen);

    CHECK_MSG(v != NULL && v->type == 'o', "not one JSON object: %s", r->out);
    return v;
}
