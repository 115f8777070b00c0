#ifndef LW_TOKEN_H
#define LW_TOKEN_H

#include <stddef.h>

/* 32 hex digits of per-thread randomness, ':', a per-thread sequence. */
#define LW_TOKEN_MAX 52

/* Write a fresh token for this thread into buf (LW_TOKEN_MAX bytes) and
 * return its length, or a negative LW_E... code if no randomness could be had.
 */
int lw__token_new(char *buf);

#endif
