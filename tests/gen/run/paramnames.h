/* The annotation names parameters as this declaration does. */
#include <lockweave.h>

REDIS_LOCK("acct:{account}:{cents}", 2s, 0, skip_if = cents == 0)
int charge(int account, int cents);
