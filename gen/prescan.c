/*
 * The cheap test before any parse: can REDIS_LOCK appear in this
 * translation unit?  An annotation on a header's declaration reaches a
 * definition in a .c file that never spells REDIS_LOCK itself, and an alias
 * macro (#define STOCK_LOCK(k) REDIS_LOCK(k, 10s, 5s)) can live in any
 * header, so every header the file can reach is read: forced includes
 * (-include, -imacros), then each #include, looked up as the compiler does
 * (the includer's directory for "quoted" names, -iquote, -I, -isystem,
 * -idirafter, then the system directories).  Text only, no preprocessing:
 * an #include inside #if 0 is read too, which only costs time.  What the
 * text cannot tell (a computed #include MACRO) answers yes, and the parse
 * decides.  <lockweave.h>, which defines the macro, does not count.
 *
 * A wrong "no" is caught anyway: the file is compiled with
 * LW__MODE_UNPARSED, where any REDIS_LOCK is a compile error.
 */
#include "args.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILES 2048

#ifndef LW_MULTIARCH
#define LW_MULTIARCH ""
#endif

typedef struct prescan {
    lw_argv quote, dirs; /* "quoted" only; then every lookup, in order */
    lw_argv *seen;       /* every file read, for the depfile */
    /* Names already looked up in dirs, and where each was found ("": not
     * found): system headers include the same few dozen again and again. */
    lw_argv looked, found;
} prescan;

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int mentions(prescan *ps, const char *path, const char *text);

/* 1: mentions (or cannot tell); 0: does not. */
static int visit(prescan *ps, const char *path)
{
    char *abs = path_absolute(path);
    int r = 0;
    for (int i = 0; i < ps->seen->n; i++)
        if (strcmp(ps->seen->v[i], abs) == 0)
            goto cleanup;
    if (ps->seen->n >= MAX_FILES) {
        r = 1; /* too many to judge cheaply: let the parse decide */
        goto cleanup;
    }
    argv_push(ps->seen, abs);
    lw_buf b = {0};
    if (file_read(abs, &b) == 0)
        r = mentions(ps, abs, b.p ? b.p : "");
    buf_free(&b);
cleanup:
    free(abs);
    return r;
}

/* 1 or 0 as visit(); -1: no such file in dir. */
static int find_and_visit(prescan *ps, const char *dir, const char *name)
{
    lw_buf p = {0};
    buf_printf(&p, "%s/%s", dir, name);
    int found = is_file(p.p);
    int r = found ? visit(ps, p.p) : -1;
    buf_free(&p);
    return r;
}

/* find_and_visit() over every directory of ps->dirs, in order. */
static int find_in_dirs(prescan *ps, const char *name)
{
    int k = 0;
    while (k < ps->looked.n && strcmp(ps->looked.v[k], name) != 0)
        k++;
    if (k == ps->looked.n) {
        const char *hit = "";
        lw_buf p = {0};
        for (int i = 0; i < ps->dirs.n && !*hit; i++) {
            p.len = 0;
            buf_printf(&p, "%s/%s", ps->dirs.v[i], name);
            if (is_file(p.p))
                hit = p.p;
        }
        argv_push(&ps->looked, name);
        argv_push(&ps->found, hit);
        buf_free(&p);
    }
    return *ps->found.v[k] ? visit(ps, ps->found.v[k]) : -1;
}

/* The include directive at p (just past "#"), if any: 1 with the name in
 * *name (caller frees) and its kind in *close; 0 when p is no include;
 * -1 for an include the text cannot resolve (a macro names the file). */
static int parse_include(const char *p, char **name, char *close)
{
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "include", 7) == 0)
        p += 7;
    else if (strncmp(p, "import", 6) == 0)
        p += 6;
    else
        return 0;
    if (strncmp(p, "_next", 5) == 0)
        p += 5;
    if (*p != ' ' && *p != '\t' && *p != '"' && *p != '<')
        return 0; /* #includes, #important... */
    while (*p == ' ' || *p == '\t')
        p++;
    *close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
    if (!*close)
        return -1;
    const char *e = strchr(p + 1, *close);
    const char *nl = strchr(p + 1, '\n');
    if (!e || (nl && nl < e))
        return -1;
    *name = xstrndup(p + 1, (size_t)(e - p - 1));
    return 1;
}

static int mentions(prescan *ps, const char *path, const char *text)
{
    if (strstr(text, "REDIS_LOCK") || strstr(text, "REDIS_ONCE"))
        return 1;
    const char *slash = strrchr(path, '/');
    char *dir = xstrndup(path, slash ? (size_t)(slash - path) : 0);
    int r = 0;
    for (const char *l = text; l && *l && !r;
         l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *p = l;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '#')
            continue;
        char *name = NULL, close = 0;
        int k = parse_include(p + 1, &name, &close);
        if (k < 0)
            r = 1;
        if (k <= 0)
            continue;
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        if (strcmp(base, "lockweave.h") != 0) {
            int f = -1;
            if (name[0] == '/')
                f = is_file(name) ? visit(ps, name) : -1;
            if (f < 0 && close == '"')
                f = find_and_visit(ps, dir, name);
            for (int i = 0; f < 0 && close == '"' && i < ps->quote.n; i++)
                f = find_and_visit(ps, ps->quote.v[i], name);
            if (f < 0)
                f = find_in_dirs(ps, name);
            r = f > 0;
        }
        free(name);
    }
    free(dir);
    return r;
}

/* The value of option opt at flags[*i] (joined or the next argument), or
 * NULL when flags[*i] is not opt. */
static const char *opt_value(const lw_argv *flags, int *i, const char *opt)
{
    const char *a = flags->v[*i];
    size_t n = strlen(opt);
    if (strncmp(a, opt, n) != 0)
        return NULL;
    if (a[n])
        return a[n] == '=' && strcmp(opt, "--sysroot") == 0 ? a + n + 1 : a + n;
    return *i + 1 < flags->n ? flags->v[++*i] : NULL;
}

int prescan_mentions(const char *path, const char *text, const lw_argv *flags,
                     lw_argv *seen)
{
    prescan ps = {.seen = seen};
    lw_argv system = {0}, after = {0}, forced = {0};
    int nostdinc = 0, r = 0;
    const char *v;

    for (int i = 0; i < flags->n; i++) {
        const char *a = flags->v[i];
        if (strcmp(a, "-nostdinc") == 0)
            nostdinc = 1;
        /* Longest names first: -isystem is not -I with "system". */
        else if ((v = opt_value(flags, &i, "-include")) ||
                 (v = opt_value(flags, &i, "-imacros")))
            argv_push(&forced, v);
        else if ((v = opt_value(flags, &i, "-iquote")))
            argv_push(&ps.quote, v);
        else if ((v = opt_value(flags, &i, "-isystem")))
            argv_push(&system, v);
        else if ((v = opt_value(flags, &i, "-idirafter")))
            argv_push(&after, v);
        else if (strncmp(a, "-i", 2) == 0 || strncmp(a, "-I-", 3) == 0)
            continue; /* -isysroot, -iprefix...: no directory of headers */
        else if ((v = opt_value(flags, &i, "-I")))
            argv_push(&ps.dirs, v);
    }
    /* The compiler's order: -I, then -isystem, the system directories,
     * then -idirafter. */
    for (int i = 0; i < system.n; i++)
        argv_push(&ps.dirs, system.v[i]);
    if (!nostdinc) {
        static const char multiarch[] = "/usr/include/" LW_MULTIARCH;
        argv_push(&ps.dirs, "/usr/local/include");
        if (sizeof multiarch > sizeof "/usr/include/")
            argv_push(&ps.dirs, multiarch);
        argv_push(&ps.dirs, "/usr/include");
    }
    for (int i = 0; i < after.n; i++)
        argv_push(&ps.dirs, after.v[i]);

    argv_push(seen, path);
    for (int i = 0; i < forced.n && !r; i++) {
        const char *base = strrchr(forced.v[i], '/');
        if (strcmp(base ? base + 1 : forced.v[i], "lockweave.h") == 0)
            continue;
        /* -include resolves against the current directory first. */
        r = is_file(forced.v[i]) ? visit(&ps, forced.v[i]) : 1;
    }
    if (!r)
        r = mentions(&ps, path, text);
    argv_free(&ps.quote);
    argv_free(&ps.dirs);
    argv_free(&ps.looked);
    argv_free(&ps.found);
    argv_free(&system);
    argv_free(&after);
    argv_free(&forced);
    return r;
}
