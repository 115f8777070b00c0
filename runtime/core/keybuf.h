#ifndef LW_KEYBUF_H
#define LW_KEYBUF_H

#include "core/guard.h"

/* Free g's key if it grew onto the heap; the key is empty again. */
void lw__key_free(struct lw_gimpl *g);

#endif
