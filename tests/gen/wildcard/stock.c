#include "stock.h"

static int stock[16] = {5};

int deduct(int64_t id, int qty)
{
    stock[id % 16] -= qty;
    return stock[id % 16];
}
