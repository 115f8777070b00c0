#include <lockweave.h>

REDIS_LOCK("stock:{stock}", 10s, 5s)
int deduct(long stock_id, int qty) { return (int)stock_id + qty; }

REDIS_LOCK("a:{id}:{b}", 1s, 0)
int two(int id, int) { return id; }

// expect: 3:19: error: 'stock' in the key is not a parameter of 'deduct'
// expect: 6:20: error: 'b' in the key is not a parameter of 'two' (unnamed parameters cannot be used in the key)
