/*
 * lockweave-gen: weave REDIS_LOCK annotations into a copy of a C file.
 *
 *   lockweave-gen [options] INPUT.c -o OUTPUT.c [-- compiler flags...]
 *   lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...
 *
 * The first form reads INPUT.c and writes the woven copy; the second is a
 * compiler launcher (lockweave_generate() makes it the target's): it weaves
 * the source of the compile it is given and runs that compile on the
 * result.  Either way, a file whose text and headers never mention
 * REDIS_LOCK (prescan.c) is not parsed and is compiled with LW__MODE_UNPARSED;
 * one that does is parsed with libclang using the compiler flags, every
 * annotation is checked, and each annotated definition is woven.  On any
 * error: diagnostics on stderr, exit status 1, nothing written or compiled.
 */
#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LW_CLANG_RESOURCE_DIR
#define LW_CLANG_RESOURCE_DIR ""
#endif

#ifdef LW_GEN_FRONT
#include <limits.h>
#include <unistd.h>

/* Replace this process with lockweave-gen-scan, installed beside it, on the
 * same command line.  Returns only on failure. */
static void exec_scan(char **argv)
{
    char front[PATH_MAX], scan[PATH_MAX];
    if (self_paths(front, scan, sizeof scan) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot find its own path\n");
        return;
    }
    argv[0] = scan;
    execv(scan, argv);
    fprintf(stderr, "lockweave-gen: error: cannot run %s: %s\n", scan,
            strerror(errno));
}
#else
/* Parse s->input with the compiler flags, plus what the scan needs: the
 * annotate expansion of REDIS_LOCK and clang's own headers (stddef.h,
 * stdarg.h...) explicitly rather than by a guess relative to libclang.so.
 * Warnings are not shown (the compiler shows them on the woven file) and
 * never turned into errors here.  0, or -1 after reporting errors. */
static int scan_with(lw_scan *s, lw_argv *flags, const char *resdir)
{
    argv_push(flags, "-DLW__MODE=" LW_MODE_SCAN);
    if (resdir && *resdir) {
        lw_buf inc = {0};
        buf_printf(&inc, "%s/include", resdir);
        argv_push(flags, "-resource-dir");
        argv_push(flags, resdir);
        argv_push(flags, "-isystem");
        argv_push(flags, inc.p);
        buf_free(&inc);
    }
    argv_push(flags, "-Wno-unknown-warning-option");
    argv_push(flags, "-ferror-limit=0");
    return scan_file(s, (const char *const *)flags->v, flags->n);
}
#endif

static const char *resource_dir(void)
{
    const char *r = getenv("LOCKWEAVE_CLANG_RESOURCE_DIR");
    return r && *r ? r : LW_CLANG_RESOURCE_DIR;
}

/* lockweave-gen --launch COMMAND...: weave the one source of a compile
 * command, then run the command on the result. */
static int launch(int argc, char **argv)
{
    lw_compile c;
    lw_argv flags = {0}, pre = {0}, post = {0}, seen = {0};
    lw_buf src = {0};
    char *input_abs = NULL;
    int status = 1;

    compile_parse(&c, argc - 2, argv + 2);
    if (c.argc == 0) {
        fputs("usage: lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...\n",
              stderr);
        return 2;
    }
    /* Linking, assembling, precompiling a header: nothing to weave. */
    if (c.nsrc == 0 || c.other_input)
        return compile_run(&c, NULL, NULL, NULL, NULL);
    if (c.nsrc > 1) {
        fprintf(stderr,
                "lockweave-gen: error: %d C sources in one command; "
                "lockweave-gen --launch weaves one source per compile (-c)\n",
                c.nsrc);
        return 1;
    }
    input_abs = path_absolute(c.argv[c.src]);
    if (file_read(input_abs, &src) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot read %s\n", input_abs);
        goto cleanup;
    }
    flags_filter(&flags, c.argv + c.first_opt, c.argc - c.first_opt, NULL,
                 c.argv[c.src]);
#ifdef LW_GEN_FRONT
    if (!prescan_mentions(input_abs, src.p ? src.p : "", &flags, &seen)) {
        argv_push(&post, "-DLW__MODE=" LW_MODE_UNPARSED);
        status = compile_run(&c, NULL, NULL, &post, NULL);
        goto cleanup;
    }
    exec_scan(argv);
#else
    {
        lw_scan s = {0};
        lw_buf out = {0};
        char *woven = NULL;
        int temp = 0;
        s.input = input_abs;
        s.line_name = c.argv[c.src];
        s.cxx = c.cxx;
        s.main.name = input_abs;
        s.main.text = src.p ? src.p : "";
        s.main.len = src.len;
        if (scan_with(&s, &flags, resource_dir()) != 0)
            ; /* reported */
        else if (s.nfuncs == 0) {
            /* Annotated declarations only: they compile as they are. */
            argv_push(&post, "-DLW__MODE=" LW_MODE_WOVEN);
            status = compile_run(&c, NULL, NULL, &post, NULL);
        } else if ((woven = compile_woven_path(&c, &temp)) == NULL)
            perror("lockweave-gen: error: cannot make a temporary directory");
        else {
            weave(&s, woven, &out);
            if (file_write_if_changed(woven, out.p, out.len, 0) != 0)
                fprintf(stderr, "lockweave-gen: error: cannot write %s: %s\n",
                        woven, strerror(errno));
            else {
                /* The copy lives elsewhere: "quoted" includes must still
                 * find the files next to the original first. */
                const char *name = c.argv[c.src], *slash = strrchr(name, '/');
                char *dir = slash ? xstrndup(name, (size_t)(slash - name))
                                  : xstrdup(".");
                argv_push(&pre, "-iquote");
                argv_push(&pre, *dir ? dir : "/");
                free(dir);
                /* The woven file says LW__MODE itself, but a header forced
                 * in with -include comes before its first line. */
                argv_push(&post, "-DLW__MODE=" LW_MODE_WOVEN);
                status =
                    compile_run(&c, woven, &pre, &post, temp ? woven : NULL);
            }
        }
        if (status != 0 && diag_errors())
            fprintf(stderr, "%d error%s generated; %s not compiled.\n",
                    diag_errors(), diag_errors() == 1 ? "" : "s",
                    c.argv[c.src]);
        free(woven);
        buf_free(&out);
        scan_free(&s);
    }
#endif
cleanup:
    argv_free(&flags);
    argv_free(&pre);
    argv_free(&post);
    argv_free(&seen);
    buf_free(&src);
    free(input_abs);
    return status;
}

static void usage(FILE *f)
{
    fputs(
        "usage: lockweave-gen [options] INPUT.c -o OUTPUT.c [-- compiler "
        "flags]\n"
        "       lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...\n"
        "  -o FILE             the woven file to write\n"
        "  --depfile FILE      also write a make-style depfile (all files "
        "read)\n"
        "  -p BUILD_DIR        take the compiler flags from "
        "BUILD_DIR/compile_commands.json\n"
        "  --resource-dir DIR  clang's resource directory (default: built in,\n"
        "                      or $LOCKWEAVE_CLANG_RESOURCE_DIR)\n"
        "  --touch             update OUTPUT's time even when its content is "
        "unchanged\n"
        "                      (for build tools without restat, such as Make)\n"
        "  --launch            be the compiler launcher: weave the source of "
        "the\n"
        "                      compile command that follows, then run it\n"
        "  --version, --help\n",
        f);
}

int main(int argc, char **argv)
{
    const char *input = NULL, *output = NULL, *depfile = NULL, *pdir = NULL;
    const char *resdir = resource_dir();
    int touch = 0, status = 1;
    char *input_abs = NULL, *output_abs = NULL;
    lw_argv flags = {0}, seen = {0};
    lw_buf src = {0}, out = {0};
#ifndef LW_GEN_FRONT
    lw_scan s = {0};
#endif
    int dashdash = -1;

    if (argc > 1 && strcmp(argv[1], "--launch") == 0)
        return launch(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            dashdash = i;
            break;
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc)
            output = argv[++i];
        else if (strcmp(a, "--depfile") == 0 && i + 1 < argc)
            depfile = argv[++i];
        else if (strcmp(a, "-p") == 0 && i + 1 < argc)
            pdir = argv[++i];
        else if (strcmp(a, "--resource-dir") == 0 && i + 1 < argc)
            resdir = argv[++i];
        else if (strcmp(a, "--touch") == 0)
            touch = 1;
        else if (strcmp(a, "--version") == 0) {
            printf("lockweave-gen %s (libclang resource dir %s)\n",
                   LW_GEN_VERSION, resdir);
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr,
                    "lockweave-gen: error: unknown option '%s' (compiler "
                    "flags go after '--')\n",
                    a);
            usage(stderr);
            return 2;
        } else if (!input)
            input = a;
        else {
            fprintf(stderr,
                    "lockweave-gen: error: more than one input ('%s', '%s')\n",
                    input, a);
            return 2;
        }
    }
    if (!input || !output) {
        usage(stderr);
        return 2;
    }
    input_abs = path_absolute(input);
    output_abs = path_absolute(output);

    if (file_read(input_abs, &src) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot read %s\n", input_abs);
        goto cleanup;
    }
    if (pdir && compdb_flags(pdir, input_abs, &flags) != 0)
        goto cleanup;
    if (dashdash > 0)
        flags_filter(&flags, argv + dashdash + 1, argc - dashdash - 1, NULL,
                     input);
    /* The cheap path, before any parse: most files of a target see no
     * annotation at all.  The depfile names the output as the command line
     * did, as a compiler's does, so the rule that includes it matches. */
    if (!prescan_mentions(input_abs, src.p ? src.p : "", &flags, &seen)) {
        weave_passthrough(input_abs, LW_MODE_UNPARSED, &out);
        if (file_write_if_changed(output_abs, out.p, out.len, touch) != 0 ||
            (depfile &&
             depfile_write(depfile, output, (const char *const *)seen.v,
                           seen.n) != 0)) {
            perror("lockweave-gen: error: cannot write output");
            goto cleanup;
        }
        status = 0;
        goto cleanup;
    }
#ifdef LW_GEN_FRONT
    /* The rest needs libclang, and merely loading it (libLLVM's relocations
     * and static constructors) costs ~20 ms, more than the whole cheap path
     * above: the parse lives in a second executable, run only now. */
    exec_scan(argv);
    goto cleanup;
#else
    s.input = input_abs;
    s.line_name = input_abs;
    s.main.name = input_abs;
    s.main.text = src.p;
    s.main.len = src.len;
    if (scan_with(&s, &flags, resdir) != 0)
        goto cleanup;

    /* Nothing defined here is annotated (it only calls or declares): the
     * original compiles as it is. */
    if (s.nfuncs == 0)
        weave_passthrough(input_abs, LW_MODE_WOVEN, &out);
    else
        weave(&s, output_abs, &out);
    if (file_write_if_changed(output_abs, out.p, out.len, touch) != 0 ||
        (depfile && depfile_write(depfile, output, (const char *const *)s.deps,
                                  s.ndeps) != 0)) {
        perror("lockweave-gen: error: cannot write output");
        goto cleanup;
    }
#endif
    status = 0;
cleanup:
    if (status != 0 && diag_errors())
        fprintf(stderr, "%d error%s generated; %s not written.\n",
                diag_errors(), diag_errors() == 1 ? "" : "s", output);
#ifndef LW_GEN_FRONT
    scan_free(&s);
#endif
    argv_free(&flags);
    argv_free(&seen);
    buf_free(&src);
    buf_free(&out);
    free(input_abs);
    free(output_abs);
    return status;
}
