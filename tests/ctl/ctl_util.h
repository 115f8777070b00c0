/* What the lockweave-ctl tests share: running the command and reading
 * what it wrote, and a strict JSON reader for its --json output. */
#ifndef LW_CTL_UTIL_H
#define LW_CTL_UTIL_H

#include <stddef.h>

#include "check.h"

/* The lockweave-ctl under test: argv[1] of the test program.  With
 * LW_CTL_MEMCHECK=1 in the environment (test.sh's memcheck pass) it runs
 * under valgrind, and an error valgrind finds in it aborts the test. */
void ctl_init(int argc, char **argv);

/* How stdin is given to the command. */
enum {
    CTL_IN_NULL, /* /dev/null: not a terminal */
    CTL_IN_TTY   /* a pseudo-terminal, the answer typed into it */
};

struct ctl_run {
    int status;      /* exit status; 128 + signal when killed */
    char *out, *err; /* NUL-terminated */
    size_t outlen, errlen;
};

/* Run lockweave-ctl with LOCKWEAVE_REDIS_URL=url (NULL: unset) and the
 * arguments (NULL-terminated); stdin as `in` says (answer: what is typed
 * at the terminal once its prompt, "[y/N]", is on stderr).  Prints the
 * command, its status and its output. */
void ctl_run(struct ctl_run *r, const char *url, int in, const char *answer,
             ...);
void ctl_run_free(struct ctl_run *r);

/* Called, when set, between the prompt and the answer. */
extern void (*ctl_before_answer)(void);

/* Every byte printable ASCII or a newline: nothing raw reached the
 * terminal. */
int ctl_printable(const char *p, size_t n);

/* A parsed JSON value. */
typedef struct jv {
    char type; /* 'o' object, 'a' array, 's' string, 'n' number, 'b' bool,
                  'z' null */
    char *s;   /* string bytes (decoded, NUL-terminated) */
    size_t slen;
    double num;
    int b;
    size_t n;    /* members or elements */
    char **keys; /* objects */
    struct jv **items;
} jv;

/* The one JSON value text holds (whitespace around it allowed), checked
 * strictly: NULL when it is not exactly that. */
jv *jv_parse(const char *text, size_t len);
void jv_free(jv *v);
/* An object's member (NULL: none, or v is not an object). */
const jv *jv_get(const jv *v, const char *key);
/* Its number, CHECKed to be one. */
long long jv_int(const jv *v, const char *key);
/* Its string, CHECKed to be one. */
const char *jv_str(const jv *v, const char *key);
/* Its bool, CHECKed to be one. */
int jv_bool(const jv *v, const char *key);

/* r's stdout as JSON, CHECKed to parse. */
jv *ctl_json(const struct ctl_run *r);

#endif
