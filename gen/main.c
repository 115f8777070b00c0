/*
 * lockweave-gen: weave REDIS_LOCK annotations into a copy of a C file.
 *
 *   lockweave-gen [options] INPUT.c -o OUTPUT.c [-- compiler flags...]
 *
 * Reads INPUT.c, and when it or a header it includes contains REDIS_LOCK
 * (prescan.c) parses it with libclang
 * using the compiler flags, checks every annotation and writes the woven
 * copy; otherwise writes a one-line file that includes INPUT.c unchanged.
 * On any error: diagnostics on stderr, exit status 1, no output written.
 */
#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LW_CLANG_RESOURCE_DIR
#define LW_CLANG_RESOURCE_DIR ""
#endif

#ifdef LW_GEN_FRONT
#include <errno.h>
#include <limits.h>
#include <unistd.h>

/* Replace this process with lockweave-gen-scan, installed beside it, on the
 * same command line.  Returns only on failure. */
static void exec_scan(char **argv)
{
    char self[PATH_MAX], *slash;
    static const char name[] = "lockweave-gen-scan";
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - sizeof name);

    if (n <= 0 || (slash = memrchr(self, '/', (size_t)n)) == NULL) {
        fprintf(stderr, "lockweave-gen: error: cannot find its own path\n");
        return;
    }
    memcpy(slash + 1, name, sizeof name);
    argv[0] = self;
    execv(self, argv);
    fprintf(stderr, "lockweave-gen: error: cannot run %s: %s\n", self,
            strerror(errno));
}
#endif

static void usage(FILE *f)
{
    fputs(
        "usage: lockweave-gen [options] INPUT.c -o OUTPUT.c [-- compiler "
        "flags]\n"
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
        "  --version, --help\n",
        f);
}

int main(int argc, char **argv)
{
    const char *input = NULL, *output = NULL, *depfile = NULL, *pdir = NULL;
    const char *resdir = getenv("LOCKWEAVE_CLANG_RESOURCE_DIR");
    int touch = 0, status = 1;
    char *input_abs = NULL, *output_abs = NULL;
    lw_argv flags = {0}, seen = {0};
    lw_buf src = {0}, out = {0};
#ifndef LW_GEN_FRONT
    lw_scan s = {0};
#endif
    int dashdash = -1;

    if (!resdir || !*resdir)
        resdir = LW_CLANG_RESOURCE_DIR;
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
     * annotation at all. */
    if (!prescan_mentions(input_abs, src.p, &flags, &seen)) {
        weave_passthrough(input_abs, &out);
        if (file_write_if_changed(output_abs, out.p, out.len, touch) != 0 ||
            (depfile &&
             depfile_write(depfile, output_abs, (const char *const *)seen.v,
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
    /* What the scan adds: the annotate expansion of REDIS_LOCK, clang's own
     * headers (stddef.h, stdarg.h...) explicitly rather than by a guess
     * relative to libclang.so.  Warnings are not shown (the compiler shows
     * them on the woven file) and never turned into errors here. */
    argv_push(&flags, "-DLW__SCAN=1");
    if (resdir && *resdir) {
        lw_buf inc = {0};
        buf_printf(&inc, "%s/include", resdir);
        argv_push(&flags, "-resource-dir");
        argv_push(&flags, resdir);
        argv_push(&flags, "-isystem");
        argv_push(&flags, inc.p);
        buf_free(&inc);
    }
    argv_push(&flags, "-Wno-unknown-warning-option");
    argv_push(&flags, "-ferror-limit=0");

    s.input = input_abs;
    s.main.name = input_abs;
    s.main.text = src.p;
    s.main.len = src.len;
    if (scan_file(&s, (const char *const *)flags.v, flags.n) != 0)
        goto cleanup;

    /* Nothing defined here is annotated (it only calls or declares): the
     * original compiles as it is. */
    if (s.nfuncs == 0)
        weave_passthrough(input_abs, &out);
    else
        weave(&s, output_abs, &out);
    if (file_write_if_changed(output_abs, out.p, out.len, touch) != 0 ||
        (depfile && depfile_write(depfile, output_abs,
                                  (const char *const *)s.deps, s.ndeps) != 0)) {
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
