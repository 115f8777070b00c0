/* Child processes of the end-to-end test: service instances and the load
 * generator, started from the test and stopped by their PIDs. */
#ifndef INV_E2E_PROCS_H
#define INV_E2E_PROCS_H

#include <stddef.h>
#include <sys/types.h>

struct svc_proc {
    pid_t pid; /* 0 when not running */
    int port;
    char port_file[256];
};

/* Start a service instance (exe: inventory-service or inventory-loop, which
 * take the same options) on a free loopback port with the given db,
 * LOCKWEAVE_REDIS_URL=redis_url and the extra arguments (NULL-terminated,
 * may be NULL); wait until GET /health answers.  0, or -1 (printed). */
int svc_start(struct svc_proc *p, const char *exe, const char *dir, int idx,
              const char *db, const char *redis_url, char *const *extra);

/* SIGTERM and wait (SIGKILL after 5 s).  Returns the exit status (0: a
 * clean shutdown; sanitizers and crashes make it non-zero), -1 if it had to
 * be killed.  0 on a stopped one. */
int svc_stop(struct svc_proc *p);

/* Run argv (argv[0] a path), echo its output, and copy the JSON after its
 * "SUMMARY " line into summary.  Returns its exit status, -1 on failure. */
int run_capture_summary(char *const *argv, char *summary, size_t len);

/* Integer field "name":N of a flat JSON object; LLONG_MIN if absent. */
long long json_int(const char *json, const char *name);

#endif /* INV_E2E_PROCS_H */
