/* Readers share a document; a writer excludes them all. */
#include <lockweave.h>

static char docs[16][64];

REDIS_LOCK("doc:{id}", 10s, 5s, mode = read)
char doc_first(int id)
{
    return docs[id][0];
}

REDIS_LOCK("doc:{id}", 10s, 5s, mode = write)
void doc_set(int id, char c)
{
    docs[id][0] = c;
}
