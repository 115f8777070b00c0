/* Throwaway TLS certificates for test servers, made with the openssl CLI. */
#include "rh_internal.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run in the directory ($1).  EC P-256 keys: fast to make.  The expired
 * certificate goes through `openssl ca`, whose -startdate/-enddate set a
 * validity window in the past (OpenSSL 3.0's x509 -req cannot). */
static const char script[] =
    "set -e\n"
    "cd \"$1\"\n"
    "key='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
    "ca() {\n"
    "  openssl req -x509 $key -keyout $1.key -out $1.pem -days 2 \\\n"
    "    -subj /CN=$2\n"
    "}\n"
    "leaf() { # name cn san [ca]\n"
    "  openssl req $key -keyout $1.key -out $1.csr -subj /CN=$2 \\\n"
    "    ${3:+-addext subjectAltName=$3}\n"
    "  openssl x509 -req -in $1.csr -CA ${4:-ca}.pem -CAkey ${4:-ca}.key \\\n"
    "    -CAcreateserial -days 2 -copy_extensions copy -out $1.pem\n"
    "}\n"
    "ca ca lockweave-test-ca\n"
    "ca other-ca lockweave-other-ca\n"
    "leaf server localhost DNS:localhost\n"
    "leaf node localhost DNS:localhost,IP:127.0.0.1\n"
    "leaf client lockweave-client\n"
    "leaf stranger lockweave-stranger '' other-ca\n"
    "leaf expired localhost DNS:localhost\n"
    "mkdir db\n"
    ": > db/index.txt\n"
    "echo 1000 > db/serial\n"
    "printf '%s\\n' '[ca]' 'default_ca = lw' '[lw]' \\\n"
    "  'database = db/index.txt' 'new_certs_dir = db' 'serial = db/serial' \\\n"
    "  'default_md = sha256' 'policy = any' 'copy_extensions = copy' \\\n"
    "  'unique_subject = no' '[any]' 'commonName = supplied' > ca.cnf\n"
    "openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key \\\n"
    "  -in expired.csr -out expired.pem -notext \\\n"
    "  -startdate 20200101000000Z -enddate 20200102000000Z\n";

/* Where each file goes in an rh_tls. */
static const struct {
    size_t at;
    const char *name;
} files[] = {
    {offsetof(rh_tls, ca), "ca.pem"},
    {offsetof(rh_tls, ca_key), "ca.key"},
    {offsetof(rh_tls, server), "server.pem"},
    {offsetof(rh_tls, server_key), "server.key"},
    {offsetof(rh_tls, node), "node.pem"},
    {offsetof(rh_tls, node_key), "node.key"},
    {offsetof(rh_tls, expired), "expired.pem"},
    {offsetof(rh_tls, expired_key), "expired.key"},
    {offsetof(rh_tls, client), "client.pem"},
    {offsetof(rh_tls, client_key), "client.key"},
    {offsetof(rh_tls, other_ca), "other-ca.pem"},
    {offsetof(rh_tls, stranger), "stranger.pem"},
    {offsetof(rh_tls, stranger_key), "stranger.key"},
};

int rh_tls_make(rh_tls *t)
{
    const char *tmp = getenv("TMPDIR");
    char log[200], dir[sizeof t->dir];
    int status;
    pid_t pid;

    memset(t, 0, sizeof *t);
    if (!tmp || !*tmp || strlen(tmp) > 60)
        tmp = "/tmp";
    snprintf(t->dir, sizeof t->dir, "%s/lw-tls-XXXXXX", tmp);
    if (!mkdtemp(t->dir)) {
        perror("redis harness: mkdtemp");
        return -1;
    }
    snprintf(log, sizeof log, "%s/openssl.log", t->dir);
    pid = fork();
    if (pid < 0) {
        perror("redis harness: fork");
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl("/bin/sh", "sh", "-c", script, "sh", t->dir, (char *)NULL);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char buf[4096];
        FILE *f = fopen(log, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[n] = '\0';
        if (f)
            fclose(f);
        fprintf(stderr,
                "redis harness: making test certificates with the openssl "
                "CLI failed (status 0x%x; apt-get install openssl):\n%s\n",
                status, buf);
        rh_tls_remove(t);
        return -1;
    }
    memcpy(dir, t->dir, sizeof dir); /* not read from what is written */
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        snprintf((char *)t + files[i].at, RH_TLS_PATH, "%s/%s", dir,
                 files[i].name);
    return 0;
}

void rh_tls_remove(rh_tls *t)
{
    if (t->dir[0])
        rh_remove_tree(t->dir);
    t->dir[0] = '\0';
}

static rh_tls env_tls;
static pid_t env_owner;
static int env_state; /* 0: not tried, 1: made, -1: failed */

static void remove_env_tls(void)
{
    if (env_owner == getpid())
        rh_tls_remove(&env_tls);
}

const rh_tls *rh__tls_from_env(void)
{
    const char *v = getenv("LW_TEST_TLS");

    if (v == NULL || strcmp(v, "1") != 0)
        return NULL;
    if (env_state == 0) {
        env_state = rh_tls_make(&env_tls) == 0 ? 1 : -1;
        if (env_state == 1) {
            env_owner = getpid();
            atexit(remove_env_tls);
            setenv("LOCKWEAVE_TLS_CA_FILE", env_tls.ca, 0);
        }
    }
    return env_state == 1 ? &env_tls : NULL;
}
