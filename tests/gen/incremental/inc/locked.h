#ifndef LOCKED_H
#define LOCKED_H
#include <lockweave.h>
#define ACCOUNT_KEY "acct:{id}"
REDIS_LOCK(ACCOUNT_KEY, 5s, 1s)
int withdraw(int id, int amount);
#endif
