/* No annotation anywhere: the generator does not parse this file. */
#include <stdio.h>

int main(void) { return puts("plain") < 0; }
