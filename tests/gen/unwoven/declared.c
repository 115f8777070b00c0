/* Only includes an annotated declaration, and is built without the generator
 * (a Make build without lockweave-gen --launch): must not link either. */
#include "declared.h"

int main(void) { return 0; }
