#ifndef LW_TOKEN_H
#define LW_TOKEN_H

#include <stddef.h>

/* 32 hex digits of per-thread randomness, ':', a per-thread sequence (up
 * to 16 hex digits); a run-once mark's run adds LW_TOKEN_ONCE. */
#define LW_TOKEN_MAX 52

/* What ends a running run-once mark's token (kind_once.c): never a hex
 * digit, so lockweave-ctl tells a running mark from a mutex's token. */
#define LW_TOKEN_ONCE     ":o"
#define LW_TOKEN_ONCE_LEN 2

/* Write a fresh token for this thread into buf (LW_TOKEN_MAX bytes) and
 * return its length, or a negative LW_E... code if no randomness could be had.
 */
int lw__token_new(char *buf);

#endif
