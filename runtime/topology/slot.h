#ifndef LW_SLOT_H
#define LW_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define LW_SLOTS 16384

/* CRC16-XMODEM (polynomial 0x1021, initial value 0), as the Redis Cluster
 * specification defines it: crc16("123456789") == 0x31c3. */
uint16_t lw__crc16(const char *buf, size_t len);

/* The Redis Cluster slot of a key: CRC16 of its hash tag — the bytes between
 * the first '{' and the first '}' after it, when there are any — or of the
 * whole key, modulo 16384. */
int lw__key_slot(const char *key, size_t len);

/* Where the hash tag of key is, if it has one: 1 with *start and *len set,
 * else 0 (no '{', no '}' after it, or nothing between them). */
int lw__hash_tag(const char *key, size_t len, size_t *start, size_t *taglen);

#endif
