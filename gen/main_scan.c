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

/* Parse the input with its compiler flags, plus what the scan needs: the
 * annotate expansion of REDIS_LOCK and clang's own headers (stddef.h,
 * stdarg.h...) explicitly rather than by a guess relative to libclang.so.
 * Warnings are not shown (the compiler shows them on the woven file) and
 * never turned into errors here.  line_name: the input's name in #line.
 * 0, or -1 after reporting errors. */
static int scan_input(lw_cli *cl, lw_scan *s, const char *line_name)
{
    lw_argv *flags = &cl->flags;

    s->input = cl->input_abs;
    s->line_name = line_name;
    s->cxx = cl->launch && cl->compile.cxx;
    s->main.name = cl->input_abs;
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
    lw_buf out = {0};
    lw_argv pre = {0}, post = {0};
    char *woven = NULL, *dir = NULL;
    int temp = 0, status = 1;

    if (scan_input(cl, &s, cl->input) != 0)
        goto cleanup;
    /* The woven file says LW__MODE itself, but a header forced in with
     * -include comes before its first line. */
    argv_push(&post, "-DLW__MODE=" LW_MODE_WOVEN);
    if (s.nfuncs == 0) {
        status = compile_run(c, NULL, NULL, &post, NULL);
        goto cleanup;
    }
    woven = compile_woven_path(c, &temp);
    if (!woven) {
        perror("lockweave-gen: error: cannot make a temporary directory");
        goto cleanup;
    }
    weave(&s, woven, &out);
    if (file_write_if_changed(woven, out.p, out.len, 0) != 0) {
        fprintf(stderr, "lockweave-gen: error: cannot write %s: %s\n", woven,
                strerror(errno));
        goto cleanup;
    }
    /* The copy lives elsewhere: "quoted" includes must still find the
     * files next to the original first. */
    const char *slash = strrchr(cl->input, '/');
    dir =
        slash ? xstrndup(cl->input, (size_t)(slash - cl->input)) : xstrdup(".");
    argv_push(&pre, "-iquote");
    argv_push(&pre, *dir ? dir : "/");
    status = compile_run(c, woven, &pre, &post, temp ? woven : NULL);
cleanup:
    scan_free(&s);
    buf_free(&out);
    argv_free(&pre);
    argv_free(&post);
    free(woven);
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
