/* A warning on the definition's line and one in its body (after a tab):
 * the woven copy must report both where this file has them.  The layout is
 * the test: keep clang-format away. */
// clang-format off
#include <lockweave.h>

REDIS_LOCK("acct:{id}", 5s, 1s)
int withdraw(int id, int amount) { int unused_on_definition_line; return id - amount; }

REDIS_LOCK("acct:{id}", 5s, 1s)
int deposit(int id, int amount)
{
	int unused_in_body;
	return id + amount;
}
