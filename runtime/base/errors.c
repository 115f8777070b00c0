#include <lockweave.h>

const char *lw_strerror(int code)
{
    switch (code) {
    case LW_OK:
        return "ok";
    case LW_ETIMEOUT:
        return "lock busy: wait time ran out";
    case LW_EREDIS:
        return "Redis unreachable or replied unexpectedly";
    case LW_ELOST:
        return "lock lost while held: lease expired or taken by another "
               "owner";
    case LW_ECONFIG:
        return "bad lockweave configuration (LOCKWEAVE_REDIS_URL, its "
               "database, LOCKWEAVE_TLS_... or lw_configure)";
    case LW_ENOMEM:
        return "out of memory";
    case LW_EINVAL:
        return "invalid argument or options, or a lock Redis holds as "
               "another kind or with other permits (see the log)";
    case LW_EAUTH:
        return "Redis refused the credentials or their rights (AUTH, "
               "NOAUTH, NOPERM, or a command locks need: see the log)";
    case LW_EFORKED:
        return "lock belongs to the parent process (fork)";
    case LW_EREPLICAS:
        return "lock not confirmed by enough replicas (WAIT)";
    case LW_ESYSTEM:
        return "the system refused randomness or a thread";
    case LW_ESHUTDOWN:
        return "lw_shutdown() ran while the lock was wanted";
    case LW_ETLS:
        return "TLS handshake or server certificate verification failed";
    case LW_EDONE:
        return "run once: the outcome of an earlier run";
    case LW_ECANCELED:
        return "request canceled (lw_cancel_async or lw_loop_free)";
    default:
        return "unknown error";
    }
}
