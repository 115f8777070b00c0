#ifndef LW_REPLY_H
#define LW_REPLY_H

#include <hiredis/hiredis.h>

/* LW_OK when no reply in out[0..n) is an error; else the first one's code
 * (lw__conn_error_rc(), logged), with a line saying what to do when it is
 * a cluster's redirection. */
int lw__replies_error(redisReply **out, int n);

#endif
