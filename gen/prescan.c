/*
 * The cheap test before any parse: does REDIS_LOCK appear in the file or in
 * a project header it includes?  An annotation on a header's declaration
 * reaches a definition in a .c file that never spells REDIS_LOCK itself, so
 * the file alone is not enough.  Only text is read, no preprocessing:
 * includes written literally, looked up next to the includer and in the -I
 * / -iquote directories (not the system ones); <lockweave.h> itself, which
 * defines the macro, does not count.
 */
#include "args.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILES 512

typedef struct prescan {
    const lw_argv *quote_dirs, *dirs;
    lw_argv *seen; /* every file read, for the depfile */
} prescan;

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int mentions(prescan *ps, const char *path, const char *text);

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

static int find_and_visit(prescan *ps, const char *dir, const char *name)
{
    lw_buf p = {0};
    buf_printf(&p, "%s/%s", dir, name);
    int found = is_file(p.p);
    int r = found ? visit(ps, p.p) : 0;
    buf_free(&p);
    return found ? (r ? 1 : 0) : -1;
}

static int mentions(prescan *ps, const char *path, const char *text)
{
    if (strstr(text, "REDIS_LOCK"))
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
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "include", 7) != 0)
            continue;
        p += 7;
        if (strncmp(p, "_next", 5) == 0)
            p += 5;
        while (*p == ' ' || *p == '\t')
            p++;
        char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
        if (!close)
            continue;
        const char *e = strchr(p + 1, close);
        const char *nl = strchr(p + 1, '\n');
        if (!e || (nl && nl < e))
            continue;
        char *name = xstrndup(p + 1, (size_t)(e - p - 1));
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        if (strcmp(base, "lockweave.h") != 0) {
            int f = -1;
            if (name[0] == '/')
                f = is_file(name) ? visit(ps, name) : -1;
            if (f < 0 && close == '"')
                f = find_and_visit(ps, dir, name);
            for (int i = 0; f < 0 && close == '"' && i < ps->quote_dirs->n; i++)
                f = find_and_visit(ps, ps->quote_dirs->v[i], name);
            for (int i = 0; f < 0 && i < ps->dirs->n; i++)
                f = find_and_visit(ps, ps->dirs->v[i], name);
            r = f > 0;
        }
        free(name);
    }
    free(dir);
    return r;
}

int prescan_mentions(const char *path, const char *text, const lw_argv *flags,
                     lw_argv *seen)
{
    lw_argv quote = {0}, dirs = {0};
    for (int i = 0; i < flags->n; i++) {
        const char *a = flags->v[i];
        if (strcmp(a, "-I") == 0 && i + 1 < flags->n)
            argv_push(&dirs, flags->v[++i]);
        else if (strncmp(a, "-I", 2) == 0)
            argv_push(&dirs, a + 2);
        else if (strcmp(a, "-iquote") == 0 && i + 1 < flags->n)
            argv_push(&quote, flags->v[++i]);
        else if (strncmp(a, "-iquote", 7) == 0)
            argv_push(&quote, a + 7);
    }
    prescan ps = {&quote, &dirs, seen};
    argv_push(seen, path);
    int r = mentions(&ps, path, text);
    argv_free(&quote);
    argv_free(&dirs);
    return r;
}
