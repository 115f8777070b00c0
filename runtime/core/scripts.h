#ifndef LW_SCRIPTS_H
#define LW_SCRIPTS_H

/* The Lua scripts that make each lock step atomic on the server. */
enum lw_script_id {
    LW_SCRIPT_RENEW,
    LW_SCRIPT_RELEASE,
    LW_SCRIPT_ENQUEUE,
    LW_SCRIPT_REDLOCK,
    LW_SCRIPT_COUNT
};

const char *lw__script_text(int id);

/* SHA1 of a script as SCRIPT LOAD returned it, or NULL before the first load
 * in this process.  Shared by all connections: the SHA is a function of the
 * text only. */
const char *lw__script_sha(int id);
void lw__script_set_sha(int id, const char *sha, unsigned long len);

#endif
