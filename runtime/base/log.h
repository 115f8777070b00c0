#ifndef LW_LOG_H
#define LW_LOG_H

/* Emit one log line through the user's hook (or stderr) if level is enabled. */
void lw__log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
