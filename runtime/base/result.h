#ifndef LW_RESULT_H
#define LW_RESULT_H

/*
 * Internal results.  As in the public API, a function returns LW_OK or a
 * negative LW_E... code; one that can end in more than one way without an
 * error returns one of these positive values instead of LW_OK, so that no
 * value means two things in two files.
 */
enum lw_result {
    LW_R_BUSY = 1, /* the lock is another owner's */
    LW_R_WOKEN,    /* a waiter's mailbox said "compete", or stayed empty */
    LW_R_ASKED,    /* a pipeline met ASK in a migrating cluster slot */
    LW_R_REFUSED,  /* Redis refused the command (an ACL): not an outage */
    LW_R_SPLIT     /* a script's keys are split by a slot migration */
};

#endif
