REDIS_LOCK("h:{x}", 1s, 0)
static inline int in_header(int x) { return x; }
