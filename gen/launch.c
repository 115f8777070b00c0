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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int is_cxx_source(const char *path)
{
    return has_ext(path, cxx_exts);
}

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
            else if (strncmp(a, "-Wp,-MD,", 8) == 0)
                c->depfile = a + 8;
            else if (strncmp(a, "-Wp,-MMD,", 9) == 0)
                c->depfile = a + 9;
            if (strcmp(a, "-MD") == 0 || strcmp(a, "-MMD") == 0)
                c->md = 1;
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

/* FNV-1a: a short, stable name for an object's path. */
static uint64_t path_hash(const char *p)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3u;
    return h;
}

/* dir as this user's own directory: made, or found, mode 0700, owned by us
 * and not a link, so no one else can put a file where a compile reads. */
static int private_dir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077) != 0) {
        errno = EACCES;
        return -1;
    }
    return 0;
}

int copy_place(const lw_compile *c, lw_copy *cp)
{
    const char *tmp = getenv("TMPDIR");
    const char *src = c->argv[c->src];
    const char *base = strrchr(src, '/');
    base = base ? base + 1 : src;
    lw_buf dir = {0}, b = {0};

    memset(cp, 0, sizeof *cp);
    /* The directory's name goes into -fdebug-prefix-map=OLD=NEW. */
    if (!tmp || tmp[0] != '/' || strchr(tmp, '='))
        tmp = "/tmp";
    buf_printf(&dir, "%s/lockweave-%lu", tmp, (unsigned long)getuid());
    if (private_dir(dir.p) == 0 && c->obj && strcmp(c->obj, "-") != 0 &&
        strcmp(c->obj, "/dev/null") != 0) {
        /* Named after the object: the same compile reads the same path
         * every time (a compiler cache hashes it), and compiles of other
         * objects, in parallel, never share one. */
        char *obj = path_absolute(c->obj);
        buf_printf(&dir, "/%016llx", (unsigned long long)path_hash(obj));
        free(obj);
        if (mkdir(dir.p, 0700) != 0 && errno != EEXIST) {
            buf_free(&dir);
            return -1;
        }
    } else {
        /* No object to name it after (-E, compile and link in one), or
         * no private directory of ours: a fresh one. */
        buf_free(&dir);
        buf_printf(&dir, "%s/lockweave-XXXXXX", tmp);
        if (!mkdtemp(dir.p)) {
            buf_free(&dir);
            return -1;
        }
    }
    /* The source's own name: what the compiler derives from it (the
     * object of -c without -o, the depfile of -MD) comes out the same. */
    buf_printf(&b, "%s/%s", dir.p, base);
    cp->file = buf_take(&b);
    const char *dot = strrchr(base, '.');
    buf_printf(&b, "%s/%.*s.lw.c", dir.p,
               (int)(dot && dot != base ? (size_t)(dot - base) : strlen(base)),
               base);
    /* Not named so that file is a prefix of it: -fdebug-prefix-map would
     * give the wrappers' lines the user's file. */
    if (strncmp(b.p, cp->file, strlen(cp->file)) == 0) {
        buf_free(&b);
        buf_printf(&b, "%s/lw.%s.c", dir.p, base);
    }
    cp->shown = buf_take(&b);
    cp->dir = buf_take(&dir);
    return 0;
}

void copy_free(lw_copy *cp)
{
    free(cp->file);
    free(cp->shown);
    free(cp->dir);
    memset(cp, 0, sizeof *cp);
}

/* After the compile: the copy removed, or, when LOCKWEAVE_KEEP_WOVEN asks,
 * kept under the name its wrappers' #line gives, and said where. */
static void copy_done(const lw_copy *cp, const char *input)
{
    const char *keep = getenv("LOCKWEAVE_KEEP_WOVEN");
    if (keep && *keep && strcmp(keep, "0") != 0 &&
        rename(cp->file, cp->shown) == 0) {
        fprintf(stderr, "lockweave-gen: note: the woven copy of %s is %s\n",
                input, cp->shown);
        return;
    }
    unlink(cp->file);
    rmdir(cp->dir);
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
    if (!slash)
        return -1;
    /* Copied, not printed: the lengths are checked here, where the
     * compiler can see it. */
    size_t dir = (size_t)(slash - self) + 1;
    if (dir + sizeof sname > size)
        return -1;
    memcpy(front, self, dir);
    memcpy(front + dir, fname, sizeof fname);
    memcpy(scan, self, dir);
    memcpy(scan + dir, sname, sizeof sname);
    return 0;
}

/* The depfile the compile writes: -MF's, or with -MD and no -MF, named
 * after the object (or, without -o, the source) with ".d" for its suffix,
 * as gcc and clang name it.  NULL: none.  Caller frees. */
static char *depfile_of(const lw_compile *c)
{
    if (c->depfile)
        return xstrdup(c->depfile);
    if (!c->md || (!c->obj && c->src < 0))
        return NULL;
    const char *out = c->obj ? c->obj : c->argv[c->src];
    const char *slash = strrchr(out, '/');
    if (!c->obj && slash)
        out = slash + 1; /* written in the working directory */
    slash = strrchr(out, '/');
    const char *dot = strrchr(slash ? slash + 1 : out, '.');
    lw_buf b = {0};
    buf_put(&b, out,
            dot && dot != (slash ? slash + 1 : out) ? (size_t)(dot - out)
                                                    : strlen(out));
    buf_puts(&b, ".d");
    return buf_take(&b);
}

int compile_run(const lw_compile *c, const char *input, const lw_copy *copy,
                const lw_argv *pre, const lw_argv *post)
{
    lw_argv cmd = {0};
    for (int i = 0; i < c->first_opt; i++)
        argv_push(&cmd, c->argv[i]);
    for (int i = 0; pre && i < pre->n; i++)
        argv_push(&cmd, pre->v[i]);
    for (int i = c->first_opt; i < c->argc; i++)
        argv_push(&cmd, i == c->src && copy ? copy->file : c->argv[i]);
    for (int i = 0; post && i < post->n; i++)
        argv_push(&cmd, post->v[i]);

    /* Nothing to do afterwards: become the compiler. */
    char *depfile = depfile_of(c);
    if (!depfile && !copy) {
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
     * generator built in the same tree counts within the same build.  The
     * compiler named the woven copy, which is gone after this: the depfile
     * names the user's source instead, as a compile without lockweave's
     * would. */
    char front[PATH_MAX], scan[PATH_MAX], cwd[PATH_MAX];
    /* A depfile only -MD implies is named by the compiler's rules, which
     * are guessed here: one not found where guessed is left alone. */
    if (status == 0 && depfile && (c->depfile || access(depfile, F_OK) == 0) &&
        self_paths(front, scan, sizeof front) == 0) {
        const char *deps[] = {front, scan};
        size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
        for (int i = 0; n > 1 && i < 2; i++)
            if (strncmp(deps[i], cwd, n) == 0 && deps[i][n] == '/')
                deps[i] += n + 1;
        if (depfile_add(depfile, copy ? copy->file : NULL, input, deps, 2) !=
            0) {
            fprintf(stderr, "lockweave-gen: error: cannot update %s\n",
                    depfile);
            status = 1;
        }
    }
    if (copy)
        copy_done(copy, input);
    free(depfile);
    argv_free(&cmd);
    return status;
}
