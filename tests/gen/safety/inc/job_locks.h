#include <lockweave.h>

#define JOB_LOCK(k) REDIS_LOCK(k, 10s, 5s)
