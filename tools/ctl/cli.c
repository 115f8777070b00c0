/* lockweave-ctl's command line and main(). */
#include <getopt.h>
#include <lockweave.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static const char usage_text[] =
    "usage: lockweave-ctl [options] inspect KEY\n"
    "       lockweave-ctl [options] list [PATTERN]\n"
    "       lockweave-ctl [options] unlock --force [--yes] KEY\n"
    "\n"
    "Look at and break lockweave's Redis locks.  The servers are those of\n"
    "LOCKWEAVE_REDIS_URL, as for the library: one server, a Redis Cluster\n"
    "(redis+cluster://), the master Redis Sentinel names\n"
    "(redis+sentinel://) or Redlock's masters (a list of URLs).\n"
    "\n"
    "  inspect KEY       is KEY held, by whom (process, thread, host), for\n"
    "                    how long, its fence counter, and its waiters in\n"
    "                    order (alive or dead, time waited)\n"
    "  list [PATTERN]    held locks whose key matches the glob PATTERN\n"
    "                    (default *), found with SCAN on every master\n"
    "  unlock --force KEY  delete the lock as its holder's release would and\n"
    "                    wake the next waiter; asks first unless --yes\n"
    "\n"
    "KEY and PATTERN are the key as the annotation expands it (stock:42);\n"
    "the library's prefix is put in front.\n"
    "\n"
    "options:\n"
    "  --json            one JSON object on standard output\n"
    "  --prefix P        the key prefix the locking programs configured\n"
    "                    (lw_config.key_prefix; default \"lock:\")\n"
    "  --raw             KEY and PATTERN are whole Redis keys (no prefix)\n"
    "  --escaped         KEY and PATTERN are written as the output shows\n"
    "                    keys: \\xNN for a byte, \\\\ for a backslash\n"
    "  --scan-count N    COUNT for each SCAN (default 100)\n"
    "  -y, --yes         unlock without asking\n"
    "  -f, --force       needed by unlock\n"
    "  -h, --help        this text\n"
    "  --version         the version\n"
    "\n"
    "exit status:\n"
    "  0  done: inspect found the lock held, list listed locks, unlock\n"
    "     unlocked\n"
    "  1  inspect, unlock: the lock is not held; list: no lock matched\n"
    "  2  usage error\n"
    "  3  Redis could not be reached, refused, or answered an error\n"
    "  4  bad LOCKWEAVE_REDIS_URL\n"
    "  5  unlock not confirmed: declined, or no terminal and no --yes\n"
    "  6  unlock: the lock changed hands before the release; left alone\n"
    "  7  unlock: a read lock or a semaphore (several holders): not broken\n"
    "\n"
    "See lockweave-ctl(1).\n";

static int usage(const char *why)
{
    if (why != NULL)
        fprintf(stderr, "lockweave-ctl: %s\n", why);
    fputs("Try 'lockweave-ctl --help'.\n", stderr);
    return CTL_USAGE;
}

/* The options into c.  -1 to go on with the command at argv[optind],
 * else the exit status (--help, --version, a usage error). */
static int parse_options(int argc, char **argv, struct ctl *c)
{
    enum { O_JSON = 256, O_PREFIX, O_RAW, O_ESCAPED, O_COUNT, O_VERSION };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, O_JSON},
        {"prefix", required_argument, NULL, O_PREFIX},
        {"raw", no_argument, NULL, O_RAW},
        {"escaped", no_argument, NULL, O_ESCAPED},
        {"scan-count", required_argument, NULL, O_COUNT},
        {"yes", no_argument, NULL, 'y'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0}};
    char *end;
    int opt;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, "yfh", longopts, NULL)) != -1) {
        switch (opt) {
        case O_JSON:
            c->json = 1;
            break;
        case O_PREFIX:
            c->prefix = optarg;
            break;
        case O_RAW:
            c->raw = 1;
            break;
        case O_ESCAPED:
            c->escaped = 1;
            break;
        case O_COUNT:
            c->scan_count = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || c->scan_count < 1 ||
                c->scan_count > 1000000)
                return usage("--scan-count takes a number, 1 to 1000000");
            break;
        case 'y':
            c->yes = 1;
            break;
        case 'f':
            c->force = 1;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return CTL_OK;
        case O_VERSION:
            printf("lockweave-ctl %s\n", LW_CTL_VERSION);
            return CTL_OK;
        default:
            return usage(optopt ? "unknown option, or one missing its value"
                                : "unknown option");
        }
    }
    return -1;
}

/* The command and its argument (*arg: list's default pattern, else NULL
 * when none was given).  -1 when they make sense, else CTL_USAGE. */
static int parse_command(int argc, char **argv, const struct ctl *c,
                         const char **cmd, const char **arg)
{
    if (optind >= argc)
        return usage("a command is needed: inspect, list or unlock");
    *cmd = argv[optind++];
    *arg = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return usage("too many arguments");
    if (strcmp(*cmd, "list") == 0) {
        if (*arg == NULL)
            *arg = "*";
    } else if (strcmp(*cmd, "inspect") == 0 || strcmp(*cmd, "unlock") == 0) {
        if (*arg == NULL)
            return usage("which KEY?");
        if ((*cmd)[0] == 'u' && !c->force)
            return usage("unlock breaks a lock its holder still runs under: "
                         "it needs --force");
    } else {
        return usage("unknown command: not inspect, list or unlock");
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct ctl c;
    const char *cmd = NULL, *arg = NULL;
    int rc;

    memset(&c, 0, sizeof c);
    c.scan_count = 100;
    rc = parse_options(argc, argv, &c);
    if (rc < 0)
        rc = parse_command(argc, argv, &c, &cmd, &arg);
    if (rc >= 0)
        return rc;

    rc = ctl_setup(&c);
    if (rc != CTL_OK)
        return rc;
    out_json_init(&c.j, stdout);
    if (cmd[0] == 'l')
        rc = ctl_list(&c, arg);
    else if (cmd[0] == 'i')
        rc = ctl_inspect(&c, arg);
    else
        rc = ctl_unlock(&c, arg);
    fflush(stdout);
    ctl_teardown();
    return rc;
}
