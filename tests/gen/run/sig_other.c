/* No REDIS_LOCK here: compiled as is, and still calls through the lock. */
#include "sig.h"

int call_place_from_other_file(const struct order *o) { return place(o); }

int (*place_pointer(void))(const struct order *) { return place; }
