#ifndef CXX_API_H
#define CXX_API_H
#include <lockweave.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
REDIS_LOCK("api:{id}", 5s, 1s)
uint64_t cxx_api_locked(int id);
#ifdef __cplusplus
}
#endif
#endif
