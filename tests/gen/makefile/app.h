#include <lockweave.h>

REDIS_LOCK("acct:{id}", 5s, 1s)
int debit(int id, int cents);
