/*
 * lockweave-gen-scan: the libclang parse and the weave.  lockweave-gen
 * (main_front.c) runs it, on the same command line, for a file whose
 * prescan found REDIS_LOCK.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parse the input with its compiler flags, plus what the scan needs: the
 * annotate expansion of REDIS_LOCK and clang's own headers (stddef.h,
 * stdarg.h...) explicitly rather than by a guess relative to libclang.so.
 * Warnings are not shown (the compiler shows them on the woven file) and
 * never turned into errors here.  line_name: the input as the compiler gets
 * it (the --launch form: as the command line gives it).
 * 0, or -1 after reporting errors. */
static int scan_input(lw_cli *cl, lw_scan *s, const char *line_name)
{
    lw_argv *flags = &cl->flags;

    s->input = cl->input_abs;
    s->line_name = line_name;
    s->cxx = cl->launch ? cl->compile.cxx : is_cxx_source(cl->input_abs);
    /* Named as the compiler names it: the launcher's source as the
     * command line gives it, so messages about it, about headers found
     * next to it, and the #line of expressions written in it all say what
     * the compiler's own messages say. */
    s->main.name = line_name;
    s->main.text = cl->src.p ? cl->src.p : "";
    s->main.len = cl->src.len;
    argv_push(flags, "-DLW__MODE=" LW_MODE_SCAN);
    if (cl->resdir && *cl->resdir) {
        lw_buf inc = {0};
        buf_printf(&inc, "%s/include", cl->resdir);
        argv_push(flags, "-resource-dir");
        argv_push(flags, cl->resdir);
        argv_push(flags, "-isystem");
        argv_push(flags, inc.p);
        buf_free(&inc);
    }
    argv_push(flags, "-Wno-unknown-warning-option");
    argv_push(flags, "-ferror-limit=0");
    return scan_file(s, (const char *const *)flags->v, flags->n);
}

/* The file-to-file form: the woven copy, or the original as it is when
 * nothing defined here is annotated (it only calls or declares). */
static int weave_file(lw_cli *cl)
{
    lw_scan s = {0};
    lw_buf out = {0};
    int status = 1;

    if (scan_input(cl, &s, cl->input_abs) != 0)
        goto cleanup;
    if (s.nfuncs == 0)
        weave_passthrough(cl->input_abs, LW_MODE_WOVEN, &out);
    else
        weave(&s, cl->output_abs, &out);
    status = cli_write(cl, &out, (const char *const *)s.deps, s.ndeps);
cleanup:
    scan_free(&s);
    buf_free(&out);
    return status;
}

/* The --launch form: run the compile on the woven copy, or on the original
 * when it holds annotated declarations only (they compile as they are). */
static int weave_compile(lw_cli *cl)
{
    const lw_compile *c = &cl->compile;
    lw_scan s = {0};
    lw_buf out = {0}, map = {0};
    lw_argv pre = {0}, post = {0};
    lw_copy copy = {0};
    char *dir = NULL;
    int status = 1;

    if (scan_input(cl, &s, cl->input) != 0)
        goto cleanup;
    /* The woven file says LW__MODE itself, but a header forced in with
     * -include comes before its first line. */
    argv_push(&post, "-DLW__MODE=" LW_MODE_WOVEN);
    if (s.nfuncs == 0) {
        status = compile_run(c, cl->input, NULL, NULL, &post);
        goto cleanup;
    }
    if (copy_place(c, &copy) != 0) {
        perror("lockweave-gen: error: cannot make a directory for the woven "
               "copy");
        goto cleanup;
    }
    weave(&s, copy.shown, &out);
    if (file_write_if_changed(copy.file, out.p, out.len, 0) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot write %s: %s\n",
                copy.file, strerror(errno));
        rmdir(copy.dir);
        goto cleanup;
    }
    /* The copy lives elsewhere: "quoted" includes must still find the
     * files next to the original first. */
    const char *slash = strrchr(cl->input, '/');
    dir =
        slash ? xstrndup(cl->input, (size_t)(slash - cl->input)) : xstrdup(".");
    argv_push(&pre, "-iquote");
    argv_push(&pre, *dir ? dir : "/");
    /* A wrapper leaves its locks when an exception thrown by C++ code it
     * calls passes through it (its guards' cleanup attribute), which C
     * code does only when compiled with -fexceptions.  C++ has them unless
     * the build says -fno-exceptions, which must stand: the destructor
     * that leaves a C++ function's guards needs nothing more. */
    if (!s.cxx)
        argv_push(&post, "-fexceptions");
    /* Debug information names the file compiled as the user's source,
     * as a compile without lockweave's would (#line names it everywhere
     * else). */
    if (!strchr(copy.file, '=')) {
        buf_printf(&map, "-fdebug-prefix-map=%s=%s", copy.file, cl->input);
        argv_push(&post, map.p);
    }
    status = compile_run(c, cl->input, &copy, &pre, &post);
cleanup:
    scan_free(&s);
    buf_free(&out);
    buf_free(&map);
    argv_free(&pre);
    argv_free(&post);
    copy_free(&copy);
    free(dir);
    return status;
}

int main(int argc, char **argv)
{
    lw_cli cl;
    int status = cli_start(&cl, argc, argv);
    /* Under --launch the front end ran the prescan before handing the
     * compile over.  The file-to-file form runs it again, so that
     * lockweave-gen-scan run by itself writes what lockweave-gen would for
     * a file without REDIS_LOCK. */
    if (status < 0 && cl.launch)
        status = weave_compile(&cl);
    else if (status < 0)
        status = cli_prescan(&cl) ? weave_file(&cl) : cli_unparsed(&cl);
    return cli_finish(&cl, status);
}
