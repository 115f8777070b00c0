#ifndef LW_REQUEST_H
#define LW_REQUEST_H

struct lw_request;
struct lw_resp;

/* q in RESP, in b (emptied first): an ASKING before each command with
 * LW_REQ_ASKING; a script as EVALSHA by its SHA-1, or with eval as EVAL
 * with its text (after NOSCRIPT).  0, or -1 out of memory. */
int lw__request_format(struct lw_resp *b, const struct lw_request *q, int eval);

/* The same, appended to what b holds (a pipeline of requests written at
 * once: lw__conn_run_many()). */
int lw__request_append(struct lw_resp *b, const struct lw_request *q, int eval);

#endif
