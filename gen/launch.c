/*
 * lockweave-gen as a compiler launcher, the way lockweave_generate() runs it:
 *
 *   lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...
 *
 * The build tool hands over its own compile command, so the generator sees
 * exactly the flags the compiler gets for this source and configuration,
 * and every source the target compiles reaches it, however it was added.
 * This file reads such a command and runs it again, changed as cli.c and
 * main_scan.c ask: the source replaced by its woven copy, or a definition
 * of LW__MODE added.
 */
#define _POSIX_C_SOURCE 200809L
#include "args.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Options whose value is the next argument (gcc and clang), so that value
 * is never taken for a source file. */
static const char *const with_value[] = {"-o",
                                         "-x",
                                         "-MF",
                                         "-MT",
                                         "-MQ",
                                         "-I",
                                         "-D",
                                         "-U",
                                         "-include",
                                         "-imacros",
                                         "-isystem",
                                         "-iquote",
                                         "-idirafter",
                                         "-iprefix",
                                         "-iwithprefix",
                                         "-iwithprefixbefore",
                                         "-isysroot",
                                         "-imultilib",
                                         "-Xlinker",
                                         "-Xassembler",
                                         "-Xpreprocessor",
                                         "-Xclang",
                                         "-aux-info",
                                         "-dumpbase",
                                         "-dumpbase-ext",
                                         "-dumpdir",
                                         "-L",
                                         "-T",
                                         "-u",
                                         "-z",
                                         "--param",
                                         "-target",
                                         "-arch",
                                         "-MJ",
                                         "-mllvm",
                                         "-Xanalyzer",
                                         "--serialize-diagnostics",
                                         "-ivfsoverlay",
                                         "-A",
                                         "-B"};

static int takes_value(const char *a)
{
    for (size_t i = 0; i < sizeof with_value / sizeof *with_value; i++)
        if (strcmp(a, with_value[i]) == 0)
            return 1;
    return 0;
}

static int has_ext(const char *p, const char *const *exts)
{
    const char *dot = strrchr(p, '.');
    if (!dot || strchr(dot, '/'))
        return 0;
    for (; *exts; exts++)
        if (strcmp(dot + 1, *exts) == 0)
            return 1;
    return 0;
}

static const char *const c_exts[] = {"c", NULL};
static const char *const cxx_exts[] = {"cc",  "cp",  "cxx", "cpp",
                                       "CPP", "c++", "C",   NULL};

void compile_parse(lw_compile *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->argv = argv;
    c->argc = argc;
    c->src = -1;
    c->first_opt = argc;
    /* -x LANG applies to the inputs after it: -1 by extension, 0 C, 1 C++,
     * 2 anything else (a header being precompiled, assembly...). */
    int lang = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int is_src = 0, cxx = 0;
        if (a[0] == '-' && a[1]) {
            if (c->first_opt == argc)
                c->first_opt = i;
            if (strcmp(a, "-c") == 0 || strcmp(a, "-S") == 0 ||
                strcmp(a, "-E") == 0 || strcmp(a, "-fsyntax-only") == 0)
                c->compile_only = 1;
            const char *x = NULL;
            if (strcmp(a, "-x") == 0 && i + 1 < argc)
                x = argv[i + 1];
            else if (strncmp(a, "-x", 2) == 0 && a[2])
                x = a + 2;
            if (x)
                lang = strcmp(x, "none") == 0  ? -1
                       : strcmp(x, "c") == 0   ? 0
                       : strcmp(x, "c++") == 0 ? 1
                                               : 2;
            if (strcmp(a, "-o") == 0 && i + 1 < argc)
                c->obj = argv[i + 1];
            else if (strncmp(a, "-o", 2) == 0 && a[2])
                c->obj = a + 2;
            if (strcmp(a, "-MF") == 0 && i + 1 < argc)
                c->depfile = argv[i + 1];
            else if (strncmp(a, "-MF", 3) == 0 && a[3])
                c->depfile = a + 3;
            if (takes_value(a))
                i++;
            continue;
        }
        if (lang == 0 || lang == 1) {
            is_src = 1;
            cxx = lang;
        } else if (lang == -1 && has_ext(a, c_exts))
            is_src = 1;
        else if (lang == -1 && has_ext(a, cxx_exts))
            is_src = cxx = 1;
        /* Words before the first option or source are the launchers and
         * the compiler ("ccache gcc"). */
        if (!is_src && c->first_opt == argc)
            continue;
        if (c->first_opt == argc)
            c->first_opt = i;
        if (is_src) {
            c->nsrc++;
            c->src = i;
            c->cxx = cxx;
        } else if (lang == 2)
            c->other_input = 1; /* -x c-header: a precompiled header */
    }
}

char *compile_woven_path(const lw_compile *c, int *temp)
{
    lw_buf b = {0};
    *temp = 0;
    if (c->obj && strcmp(c->obj, "-") != 0 && strcmp(c->obj, "/dev/null")) {
        /* Beside the object: foo.c.o gives foo.c.lw.c, foo.o foo.lw.c. */
        const char *slash = strrchr(c->obj, '/');
        const char *dot = strrchr(slash ? slash : c->obj, '.');
        size_t n = dot && dot != (slash ? slash + 1 : c->obj)
                       ? (size_t)(dot - c->obj)
                       : strlen(c->obj);
        buf_put(&b, c->obj, n);
    } else if (c->compile_only && !c->obj) {
        /* cc -c dir/foo.c writes ./foo.o: the woven copy goes beside it. */
        const char *src = c->argv[c->src];
        const char *base = strrchr(src, '/');
        base = base ? base + 1 : src;
        const char *dot = strrchr(base, '.');
        buf_put(&b, base,
                dot && dot != base ? (size_t)(dot - base) : strlen(base));
    } else {
        /* Nowhere to keep it (-E to stdout, compile and link in one): a
         * private directory, removed after the compile. */
        const char *tmp = getenv("TMPDIR");
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/lockweave-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            return NULL;
        const char *src = c->argv[c->src];
        const char *base = strrchr(src, '/');
        buf_printf(&b, "%s/%s", dir, base ? base + 1 : src);
        *temp = 1;
    }
    buf_puts(&b, ".lw.c");
    return buf_take(&b);
}

int self_paths(char *front, char *scan, size_t size)
{
    static const char fname[] = "lockweave-gen", sname[] = "lockweave-gen-scan";
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash || (size_t)(slash - self) + sizeof sname + 1 > size)
        return -1;
    slash[1] = 0;
    snprintf(front, size, "%s%s", self, fname);
    snprintf(scan, size, "%s%s", self, sname);
    return 0;
}

int compile_run(const lw_compile *c, const char *source, const lw_argv *pre,
                const lw_argv *post, const char *remove_after)
{
    lw_argv cmd = {0};
    for (int i = 0; i < c->first_opt; i++)
        argv_push(&cmd, c->argv[i]);
    for (int i = 0; pre && i < pre->n; i++)
        argv_push(&cmd, pre->v[i]);
    for (int i = c->first_opt; i < c->argc; i++)
        argv_push(&cmd, i == c->src && source ? source : c->argv[i]);
    for (int i = 0; post && i < post->n; i++)
        argv_push(&cmd, post->v[i]);

    /* Nothing to do afterwards: become the compiler. */
    if (!c->depfile && !remove_after) {
        execvp(cmd.v[0], cmd.v);
        fprintf(stderr, "lockweave-gen: error: cannot run %s: %s\n", cmd.v[0],
                strerror(errno));
        argv_free(&cmd);
        return 127;
    }
    int status = 127;
    pid_t pid = fork();
    if (pid == 0) {
        execvp(cmd.v[0], cmd.v);
        fprintf(stderr, "lockweave-gen: error: cannot run %s: %s\n", cmd.v[0],
                strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        perror("lockweave-gen: error: fork");
    else {
        int ws;
        while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
            ;
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    }
    /* The object depends on the generator as it does on the compiler's
     * inputs: a new lockweave-gen recompiles what it wove (or chose not
     * to), with Ninja and Make alike.  Under the working directory, the
     * name is relative to it: Ninja runs every command from the build
     * directory and knows its own outputs by such names only, so a
     * generator built in the same tree counts within the same build. */
    char front[PATH_MAX], scan[PATH_MAX], cwd[PATH_MAX];
    if (status == 0 && c->depfile &&
        self_paths(front, scan, sizeof front) == 0) {
        const char *deps[] = {front, scan};
        size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
        for (int i = 0; n > 1 && i < 2; i++)
            if (strncmp(deps[i], cwd, n) == 0 && deps[i][n] == '/')
                deps[i] += n + 1;
        if (depfile_add(c->depfile, deps, 2) != 0) {
            fprintf(stderr, "lockweave-gen: error: cannot update %s\n",
                    c->depfile);
            status = 1;
        }
    }
    if (remove_after) {
        unlink(remove_after);
        char *dir = xstrdup(remove_after);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            rmdir(dir);
        }
        free(dir);
    }
    argv_free(&cmd);
    return status;
}
