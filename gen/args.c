/*
 * The compiler flags the scan sees: from compile_commands.json (-p) and/or
 * after "--", cleaned of what would make libclang write files or fail on
 * GCC-only options, plus what the scan itself needs.
 */
#include "args.h"
#include "json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void argv_push(lw_argv *v, const char *s)
{
    if (v->n + 1 >= v->cap) {
        v->cap = v->cap ? v->cap * 2 : 32;
        v->v = xrealloc(v->v, sizeof *v->v * (size_t)v->cap);
    }
    v->v[v->n++] = xstrdup(s);
    v->v[v->n] = NULL;
}

void argv_free(lw_argv *v)
{
    for (int i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    memset(v, 0, sizeof *v);
}

/* GCC options clang rejects or warns about; a prefix match drops them. */
static const char *const gcc_only[] = {
    "-fno-tree-",
    "-ftree-",
    "-fipa-",
    "-fno-ipa-",
    "-fconserve-stack",
    "-fmax-errors=",
    "-fno-var-tracking",
    "-fvar-tracking",
    "-fanalyzer",
    "-fplugin",
    "-specs=",
    "-fno-allow-store-data-races",
    "-fsched-",
    "-fno-sched-",
    "-fgcse",
    "-fno-gcse",
    "-flto-partition=",
    "-fcompare-debug",
    "-fno-reorder-blocks",
    "-fstack-usage",
    "-fcallgraph-info",
    "-fdump-",
    "-fopt-info",
    "-Wp,",
    "-fmerge-constants",
    "-fno-merge-constants",
    "-fno-early-inlining",
    "-fprofile-update",
    "-fipa-pta",
    "-fpartial-inlining",
    "-fdiagnostics-urls",
    "-fno-diagnostics-show-caret",
    "-fno-semantic-interposition",
    "-fzero-call-used-regs",
    "-fharden",
    "-fno-inline-functions-called-once",
    "-fno-inline-small-functions",
    "-fsanitize-address-use-after-scope",
    "-Wa,",
    "-Wl,",
    "-save-temps",
    /* the scan reports errors only: warnings must not become errors */
    "-Werror",
    "-pedantic-errors",
    "-Wfatal-errors",
};

/* Options that only matter for the output, with a separate argument. */
static const char *const drop_with_arg[] = {"-o",       "-MF",      "-MT",
                                            "-MQ",      "-Xlinker", "-dumpbase",
                                            "-dumpdir", "-aux-info"};
static const char *const drop_exact[] = {
    "-c",     "-S",   "-E",      "-M",   "-MM",
    "-MD",    "-MMD", "-MP",     "-MG",  "-fsyntax-only",
    "-pipe",  "-v",   "-shared", "-pie", "-rdynamic",
    "-static"};

/* Options whose (joined or separate) argument is a path relative to the
 * compile's directory. */
static const char *const path_opts[] = {"-I",         "-isystem", "-iquote",
                                        "-idirafter", "-include", "-imacros",
                                        "-isysroot",  "--sysroot"};

static int starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static void push_path(lw_argv *out, const char *opt, const char *p,
                      const char *dir, int joined)
{
    lw_buf b = {0};
    if (joined)
        buf_puts(&b, opt);
    if (dir && p[0] != '/') {
        buf_puts(&b, dir);
        buf_putc(&b, '/');
    }
    buf_puts(&b, p);
    if (!joined)
        argv_push(out, opt);
    argv_push(out, b.p);
    buf_free(&b);
}

void flags_filter(lw_argv *out, char *const *in, int n, const char *dir,
                  const char *input)
{
    for (int i = 0; i < n; i++) {
        const char *a = in[i];
        size_t k;
        int hit = 0;
        for (k = 0; k < sizeof drop_with_arg / sizeof *drop_with_arg; k++)
            if (strcmp(a, drop_with_arg[k]) == 0)
                hit = 1;
        if (hit) {
            i++;
            continue;
        }
        for (k = 0; k < sizeof drop_exact / sizeof *drop_exact; k++)
            if (strcmp(a, drop_exact[k]) == 0)
                hit = 1;
        for (k = 0; k < sizeof gcc_only / sizeof *gcc_only; k++)
            if (starts(a, gcc_only[k]))
                hit = 1;
        /* -o<file>, -MF<file>, the input itself, other sources/objects. */
        if (hit || (starts(a, "-o") && a[2]) || starts(a, "-MF") ||
            starts(a, "-MT") || starts(a, "-MQ") ||
            (input && strcmp(a, input) == 0))
            continue;
        if (a[0] != '-') {
            size_t l = strlen(a);
            if (l > 2 &&
                (strcmp(a + l - 2, ".c") == 0 || strcmp(a + l - 2, ".o") == 0))
                continue;
        }
        int done = 0;
        for (k = 0; k < sizeof path_opts / sizeof *path_opts && !done; k++) {
            const char *o = path_opts[k];
            size_t ol = strlen(o);
            if (strcmp(a, o) == 0 && i + 1 < n) {
                push_path(out, o, in[++i], dir, 0);
                done = 1;
            } else if (strncmp(a, o, ol) == 0 && a[ol] &&
                       (ol == 2 || strcmp(o, "--sysroot") != 0 ||
                        a[ol] == '=')) {
                /* -Ifoo, --sysroot=foo; not -include mistaken for -I nclude */
                if (ol == 2 &&
                    (starts(a, "-include") || starts(a, "-imacros") ||
                     starts(a, "-isystem") || starts(a, "-iquote") ||
                     starts(a, "-idirafter") || starts(a, "-isysroot")))
                    continue;
                const char *p = a + ol + (a[ol] == '=');
                lw_buf opt = {0};
                buf_put(&opt, a, (size_t)(p - a));
                push_path(out, opt.p, p, dir, 1);
                buf_free(&opt);
                done = 1;
            }
        }
        if (!done)
            argv_push(out, a);
    }
}

/* ---- compile_commands.json -------------------------------------------- */

/* Split a shell command line the way compile_commands.json writers quote. */
static void split_command(const char *s, lw_argv *out)
{
    lw_buf w = {0};
    int in_word = 0;
    while (*s) {
        char c = *s;
        if (isspace((unsigned char)c)) {
            if (in_word) {
                argv_push(out, w.p ? w.p : "");
                w.len = 0;
                if (w.p)
                    w.p[0] = 0;
                in_word = 0;
            }
            s++;
            continue;
        }
        in_word = 1;
        if (c == '\\' && s[1]) {
            buf_putc(&w, s[1]);
            s += 2;
        } else if (c == '\'') {
            s++;
            while (*s && *s != '\'')
                buf_putc(&w, *s++);
            if (*s)
                s++;
            buf_put(&w, "", 0);
        } else if (c == '"') {
            s++;
            while (*s && *s != '"') {
                if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
                    s++;
                buf_putc(&w, *s++);
            }
            if (*s)
                s++;
            buf_put(&w, "", 0);
        } else {
            buf_putc(&w, c);
            s++;
        }
    }
    if (in_word)
        argv_push(out, w.p ? w.p : "");
    buf_free(&w);
}

/* One entry of the database.  1 when it is input_abs's (its filtered flags
 * appended to out), 0 when another file's, -1 when malformed. */
static int compdb_entry(lw_json *j, const char *input_abs, lw_argv *out)
{
    lw_buf dir = {0}, file = {0}, cmd = {0}, full = {0};
    lw_argv args = {0};
    char *abs = NULL;
    int rc = -1, have_args = 0, c;

    if (!json_eat(j, '{'))
        goto cleanup;
    while ((c = json_peek(j)) >= 0 && c != '}') {
        lw_buf key = {0};
        int r;
        if (json_string(j, &key) != 0 || !json_eat(j, ':')) {
            buf_free(&key);
            goto cleanup;
        }
        if (strcmp(key.p, "directory") == 0)
            r = json_string(j, &dir);
        else if (strcmp(key.p, "file") == 0)
            r = json_string(j, &file);
        else if (strcmp(key.p, "command") == 0)
            r = json_string(j, &cmd);
        else if (strcmp(key.p, "arguments") == 0) {
            have_args = 1;
            r = json_eat(j, '[') ? 0 : -1;
            while (!r && (c = json_peek(j)) >= 0 && c != ']') {
                lw_buf a = {0};
                r = json_string(j, &a);
                if (!r)
                    argv_push(&args, a.p ? a.p : "");
                buf_free(&a);
                json_eat(j, ',');
            }
            if (!r)
                json_eat(j, ']');
        } else
            r = json_skip(j);
        buf_free(&key);
        if (r != 0)
            goto cleanup;
        json_eat(j, ',');
    }
    if (!json_eat(j, '}'))
        goto cleanup;
    rc = 0;
    if (!file.p)
        goto cleanup;
    if (file.p[0] != '/' && dir.p)
        buf_printf(&full, "%s/", dir.p);
    buf_puts(&full, file.p);
    abs = path_absolute(full.p);
    if (strcmp(abs, input_abs) != 0)
        goto cleanup;
    if (!have_args && cmd.p)
        split_command(cmd.p, &args);
    /* args[0] is the compiler. */
    if (args.n > 0)
        flags_filter(out, args.v + 1, args.n - 1, dir.p, file.p);
    rc = 1;
cleanup:
    free(abs);
    buf_free(&full);
    buf_free(&dir);
    buf_free(&file);
    buf_free(&cmd);
    argv_free(&args);
    return rc;
}

int compdb_flags(const char *build_dir, const char *input_abs, lw_argv *out)
{
    lw_buf path = {0}, text = {0};
    int rc = -1, found = 0;
    buf_printf(&path, "%s/compile_commands.json", build_dir);
    if (file_read(path.p, &text) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot read %s\n", path.p);
        goto cleanup;
    }
    lw_json j = {text.p, text.p + text.len};
    if (!json_eat(&j, '['))
        goto bad;
    if (!json_eat(&j, ']')) {
        /* The first entry for the file wins; what follows it is not read. */
        do {
            found = compdb_entry(&j, input_abs, out);
            if (found < 0)
                goto bad;
        } while (!found && json_eat(&j, ','));
    }
    if (!found) {
        fprintf(stderr, "lockweave-gen: error: %s has no entry for %s\n",
                path.p, input_abs);
        goto cleanup;
    }
    rc = 0;
    goto cleanup;
bad:
    fprintf(stderr,
            "lockweave-gen: error: %s is not a valid compilation database\n",
            path.p);
cleanup:
    buf_free(&path);
    buf_free(&text);
    return rc;
}
