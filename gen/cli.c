/*
 * The command line of lockweave-gen and lockweave-gen-scan, the input it
 * names, and the cheap path for a file without REDIS_LOCK (cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LW_CLANG_RESOURCE_DIR
#define LW_CLANG_RESOURCE_DIR ""
#endif

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

static int read_input(lw_cli *cl)
{
    cl->input_abs = path_absolute(cl->input);
    if (file_read(cl->input_abs, &cl->src) == 0)
        return 0;
    fprintf(stderr, "lockweave-gen: error: cannot read %s\n", cl->input_abs);
    return -1;
}

/* lockweave-gen --launch COMMAND...: the one source of a compile command,
 * with the command's flags. */
static int start_launch(lw_cli *cl, int argc, char **argv)
{
    lw_compile *c = &cl->compile;

    cl->launch = 1;
    compile_parse(c, argc - 2, argv + 2);
    if (c->argc == 0) {
        fputs("usage: lockweave-gen --launch [LAUNCHER...] COMPILER ARGS...\n",
              stderr);
        return 2;
    }
    /* Linking, assembling, precompiling a header: nothing to weave. */
    if (c->nsrc == 0 || c->other_input)
        return compile_run(c, NULL, NULL, NULL, NULL);
    if (c->nsrc > 1) {
        fprintf(stderr,
                "lockweave-gen: error: %d C sources in one command; "
                "lockweave-gen --launch weaves one source per compile (-c)\n",
                c->nsrc);
        return 1;
    }
    cl->input = c->argv[c->src];
    if (read_input(cl) != 0)
        return 1;
    flags_filter(&cl->flags, c->argv + c->first_opt, c->argc - c->first_opt,
                 NULL, cl->input);
    return -1;
}

int cli_start(lw_cli *cl, int argc, char **argv)
{
    const char *pdir = NULL;
    int dashdash = -1;

    memset(cl, 0, sizeof *cl);
    cl->resdir = getenv("LOCKWEAVE_CLANG_RESOURCE_DIR");
    if (!cl->resdir || !*cl->resdir)
        cl->resdir = LW_CLANG_RESOURCE_DIR;
    if (argc > 1 && strcmp(argv[1], "--launch") == 0)
        return start_launch(cl, argc, argv);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            dashdash = i;
            break;
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc)
            cl->output = argv[++i];
        else if (strcmp(a, "--depfile") == 0 && i + 1 < argc)
            cl->depfile = argv[++i];
        else if (strcmp(a, "-p") == 0 && i + 1 < argc)
            pdir = argv[++i];
        else if (strcmp(a, "--resource-dir") == 0 && i + 1 < argc)
            cl->resdir = argv[++i];
        else if (strcmp(a, "--touch") == 0)
            cl->touch = 1;
        else if (strcmp(a, "--version") == 0) {
            printf("lockweave-gen %s (libclang resource dir %s)\n",
                   LW_GEN_VERSION, cl->resdir);
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
        } else if (!cl->input)
            cl->input = a;
        else {
            fprintf(stderr,
                    "lockweave-gen: error: more than one input ('%s', '%s')\n",
                    cl->input, a);
            return 2;
        }
    }
    if (!cl->input || !cl->output) {
        usage(stderr);
        return 2;
    }
    cl->output_abs = path_absolute(cl->output);
    if (read_input(cl) != 0)
        return 1;
    if (pdir && compdb_flags(pdir, cl->input_abs, &cl->flags) != 0)
        return 1;
    if (dashdash > 0)
        flags_filter(&cl->flags, argv + dashdash + 1, argc - dashdash - 1, NULL,
                     cl->input);
    return -1;
}

int cli_prescan(lw_cli *cl)
{
    return prescan_mentions(cl->input_abs, cl->src.p ? cl->src.p : "",
                            &cl->flags, &cl->seen);
}

int cli_write(const lw_cli *cl, const lw_buf *out, const char *const *deps,
              int ndeps)
{
    /* The depfile names the output as the command line did, as a
     * compiler's does, so the rule that includes it matches. */
    if (file_write_if_changed(cl->output_abs, out->p, out->len, cl->touch) !=
            0 ||
        (cl->depfile &&
         depfile_write(cl->depfile, cl->output, deps, ndeps) != 0)) {
        perror("lockweave-gen: error: cannot write output");
        return 1;
    }
    return 0;
}

int cli_unparsed(lw_cli *cl)
{
    lw_argv post = {0};
    lw_buf out = {0};
    int status;

    if (cl->launch) {
        argv_push(&post, "-DLW__MODE=" LW_MODE_UNPARSED);
        status = compile_run(&cl->compile, cl->input, NULL, NULL, &post);
    } else {
        weave_passthrough(cl->input_abs, LW_MODE_UNPARSED, &out);
        status =
            cli_write(cl, &out, (const char *const *)cl->seen.v, cl->seen.n);
    }
    argv_free(&post);
    buf_free(&out);
    return status;
}

int cli_finish(lw_cli *cl, int status)
{
    if (status != 0 && diag_errors())
        fprintf(stderr, "%d error%s generated; %s not %s.\n", diag_errors(),
                diag_errors() == 1 ? "" : "s",
                cl->launch ? cl->input : cl->output,
                cl->launch ? "compiled" : "written");
    argv_free(&cl->flags);
    argv_free(&cl->seen);
    buf_free(&cl->src);
    free(cl->input_abs);
    free(cl->output_abs);
    return status;
}
